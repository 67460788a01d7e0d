/**
 * Egress enforcement end to end: a REAL daemon (enforcement on, its own prefix) and real gVisor
 * sandboxes, with the fake internet rig (its own namespace and prefix) as the only destination and the
 * rig's scripted DNS server as the policy resolver's upstream. Nothing is sent outside the namespaces the
 * test made. Skipped, with the reason, when not root, without runsc, or without the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeInternet } from '@ramify/network/testing';
import { serve, type RamifyServer } from './serve.js';
import { apiCaller, realRuntimeSkip, registerRootfsTemplate, stopRealDaemon } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc', 'nft']);

const PREFIX = 'rmfe';
let dataDir: string;
let rig: FakeInternet | undefined;
let server: RamifyServer | undefined;
let key = '';

const call = apiCaller(() => server?.url, () => key);

/** Run `cmd` in the sandbox; resolves with its exit code and stdout. */
async function exec(id: string, cmd: string): Promise<{ exitCode: number; stdout: string }> {
  const r = await call('POST', `/v1/sandboxes/${id}/commands`, { cmd });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return { exitCode: r.json.exitCode as number, stdout: r.json.stdout as string };
}
// -f: a refusal by the host's SNI/Host proxy (HTTP 403) counts as a failure, like a dropped connection.
const curl = (id: string, url: string) => exec(id, `curl -sf -m 3 -o /dev/null -w '%{http_code}' ${url}`);


describe('egress enforcement through a real daemon and gVisor sandboxes', { skip, timeout: 600_000 }, () => {
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-egress-e2e-'));
    rig = await FakeInternet.start({ prefix: 'rmej' });
    server = await serve({
      dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX },
      egress: { upstreams: [{ address: rig.dns.address }] }, coreOptions: { quietNetworkTimeoutMs: 2_000 },
    });
    key = server.newApiKey ?? '';
    await registerRootfsTemplate(server.core, rootfs as string, { templateId: 'tpl_egress', snapshotId: 'snap_egress_base' });
  });
  after(async () => {
    if (server) await stopRealDaemon(server, call);
    await rig?.teardown();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
    assert.notEqual(spawnSync('nft', ['list', 'table', 'inet', PREFIX]).status, 0, 'the egress table is gone');
  });

  test('allowlist by name: the name resolves and is reachable; other names, hard-coded addresses and metadata are not; a live update opens them', async () => {
    const created = await call('POST', '/v1/sandboxes', { egress: ['www.example.com:80'], timeoutMs: 600_000 });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const id = created.json.id as string;
    assert.deepEqual(await curl(id, 'http://www.example.com/'), { exitCode: 0, stdout: '200' });
    assert.notEqual((await exec(id, 'getent hosts cdn.example.net')).exitCode, 0, 'a denied name does not resolve');
    assert.notEqual((await curl(id, 'http://203.0.113.20/')).exitCode, 0, 'the hard-coded address of a denied name');
    assert.notEqual((await curl(id, 'https://www.example.com/')).exitCode, 0, 'another port of an allowed name');
    assert.notEqual((await curl(id, 'http://169.254.169.254/')).exitCode, 0, 'metadata');
    await rig!.flush();
    assert.ok(!rig!.events('dns-query').some((q) => q.name === 'cdn.example.net'), 'the denied name never left the host');
    assert.ok(!rig!.events('http-request').some((r) => r.local === '203.0.113.20'), 'nothing reached the denied address');

    const opened = await call('PUT', `/v1/sandboxes/${id}/egress`, { rules: [] });
    assert.equal(opened.status, 200, JSON.stringify(opened.json));
    assert.deepEqual(await curl(id, 'http://cdn.example.net/'), { exitCode: 0, stdout: '200' });
    assert.notEqual((await curl(id, 'http://169.254.169.254/')).exitCode, 0, 'metadata stays closed in open mode');

    const closed = await call('PUT', `/v1/sandboxes/${id}/egress`, { rules: ['198.51.100.7:8080'] });
    assert.equal(closed.status, 200, JSON.stringify(closed.json));
    assert.notEqual((await curl(id, 'http://203.0.113.20/')).exitCode, 0, 'closed again without a restart');
  });
});
