/**
 * Ingress into a REAL microVM (issue 10's "one microVM case"): a daemon (`serve()` in-process, prefix
 * `rmiv`) that opens only the QEMU runtime, the base rootfs booted and checkpointed into a microVM
 * template, the ingress on a free loopback port. One case, because every boot and restore under TCG
 * takes seconds: a Python `http.server` in the VM answers through its URL with the token and not without,
 * and once the VM is paused the first request resumes it and is answered. The slot network is the same
 * for both runtimes, so this checks the microVM end of it (the guest's address behind the slot DNAT).
 * Skipped, with the reason, when not root, without QEMU/nft, without the prepared rootfs, or when the
 * daemon reports the microVM runtime unavailable.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, type RamifyServer } from './serve.js';
import { ingressTestKit } from './real-ingress-support.js';
import { realRuntimeSkip, registerRootfsTemplate, stopRealDaemon } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['qemu-system-x86_64', 'qemu-img', 'nft']);

const PREFIX = 'rmiv';
let dataDir: string;
let server: RamifyServer | undefined;
let key = '';
let ingressPort = 0;
let unavailable: string | undefined;

const { call, ingress, serving, urlOf } = ingressTestKit(() => (server ? { url: server.url, key, ingressPort } : undefined));

describe('ingress: a port URL into a real microVM', { skip: skip || (process.env.RAMIFY_TEST_FULL !== '1' ? 'long under TCG: runs in npm run test:full (RAMIFY_TEST_FULL=1)' : false), timeout: 1_200_000 }, () => {
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-ingress-vm-'));
    server = await serve({
      dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['microvm'], network: { prefix: PREFIX },
      coreOptions: { prewarmSlots: 1 }, ingress: { host: '127.0.0.1', port: 0 },
    });
    key = server.newApiKey ?? '';
    ingressPort = Number(server.ingress?.address.split(':').pop());
    unavailable = server.core.unavailableRuntimes?.microvm;
    if (unavailable === undefined) await registerRootfsTemplate(server.core, rootfs as string, { templateId: 'tpl_rmiv', snapshotId: 'snap_rmiv_base' });
  });
  after(async () => {
    if (server) await stopRealDaemon(server, call);
    await rm(dataDir, { recursive: true, force: true });
  });

  test('http.server in a microVM answers through its URL with the token, not without; paused, its first request wakes it', async (t) => {
    if (unavailable !== undefined) return t.skip(`the daemon reports microvm unavailable: ${unavailable}`);
    const id = await serving({ ports: [8000] }, 8000, '0.0.0.0', { 'index.html': 'hello from the microVM\n' });
    assert.equal((await call('GET', `/v1/sandboxes/${id}`)).json.runtime, 'microvm');
    const { host, token } = await urlOf(id, 8000);
    const withToken = { headers: { 'x-ramify-access-token': token as string } };
    const denied = await ingress(host, '/index.html');
    assert.equal(denied.status, 401, denied.body);
    const ok = await ingress(host, '/index.html', withToken);
    assert.equal(ok.status, 200, ok.body);
    assert.equal(ok.body, 'hello from the microVM\n');

    const paused = await call('POST', `/v1/sandboxes/${id}/pause`);
    assert.equal(paused.json.state, 'paused', JSON.stringify(paused.json));
    const woken = await ingress(host, '/index.html', withToken);
    assert.equal(woken.status, 200, woken.body);
    assert.equal(woken.body, 'hello from the microVM\n');
    assert.equal((await call('GET', `/v1/sandboxes/${id}`)).json.state, 'running');
    assert.equal((await call('GET', `/v1/sandboxes/${id}/ingress/log`)).json.wakeups, 1, 'the request woke it');
  });
});
