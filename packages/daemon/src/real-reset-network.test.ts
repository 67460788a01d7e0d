/**
 * `ramify serve --reset-network` (reset-network.ts) with a REAL daemon (gVisor, namespaces, nftables; prefix
 * `rrn`), the CLI run as a child process as a user runs it: refused while the daemon holds the data
 * directory (DATA_DIR_IN_USE) and while a sandbox of it still runs after the daemon stopped (INVALID_STATE
 * naming it); with the daemon stopped and the sandbox paused it removes every namespace, veth, table and
 * ip rule of the prefix; the next daemon builds them again and the paused sandbox resumes and runs.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { run, slotRange, layoutForPrefix } from '@ramify/network';
import { forceCleanup, leftovers } from './real-egress-support.js';
import { apiCaller, openRealDaemon, realRuntimeSkip, shellCaller, stopRealDaemon, until, type RealDaemon } from './real-test-support.js';
import { serve, type RamifyServer } from './serve.js';

const skip = realRuntimeSkip(process.env.RAMIFY_TEST_ROOTFS);
const PREFIX = 'rrn';
const CLI_MAIN = join(dirname(fileURLToPath(import.meta.resolve('@ramify/cli'))), 'main.js');
const exec = promisify(execFile);

/** `ramify serve --reset-network` on the test's data directory: exit code, stdout, stderr. */
async function reset(dataDir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [CLI_MAIN, 'serve', '--reset-network', '--data-dir', dataDir, '--network-prefix', PREFIX, '--json'], { timeout: 120_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The ip rules on the prefix's slot range (the egress route guard's). */
async function guardRules(): Promise<string[]> {
  const range = slotRange(layoutForPrefix(PREFIX));
  return (await run(['ip', 'rule', 'list'])).stdout.split('\n').filter((l) => l.includes(range));
}

// Three daemon starts (~20 s): on full runs (npm run test:full); every run keeps the pieces it composes
// (the data-dir lock's refusal: real-data-dir-lock.test.ts; destroyAll: every real test's cleanup).
const full = process.env.RAMIFY_TEST_FULL === '1' ? false : 'RAMIFY_TEST_FULL=1 only (npm run test:full): three daemon starts';

describe('ramify serve --reset-network (real daemon, gVisor)', { skip: skip || full, timeout: 300_000 }, () => {
  let daemon: RealDaemon | undefined;
  let server: RamifyServer | undefined;
  let dataDir = '';
  after(async () => {
    if (server) await server.close().catch(() => undefined);
    if (dataDir) {
      await forceCleanup(PREFIX, dataDir);
      assert.deepEqual(await leftovers(PREFIX, dataDir, [`${PREFIX}_agent`, `${PREFIX}_ingress`]), [], 'nothing of the test is left on the host');
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  test('refused while the daemon runs or a sandbox runs; then removes everything of the prefix, and the next daemon resumes the paused sandbox', async () => {
    daemon = await openRealDaemon({ runtime: 'gvisor', prefix: PREFIX, rootfs: process.env.RAMIFY_TEST_ROOTFS as string, templateId: 'tpl_rrn' });
    dataDir = daemon.dataDir;
    const key = daemon.conn.apiKey;
    const created = await daemon.call('POST', '/v1/sandboxes', { template: 'base', timeoutMs: 600_000 });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const id = created.json.id as string;
    await shellCaller(daemon.call)(id, 'echo before > /root/mark');

    const held = await reset(dataDir);
    assert.equal(held.code, 1, held.stderr);
    assert.match(held.stderr, /DATA_DIR_IN_USE/);

    // The daemon stops; its sandbox keeps running (and needs its network).
    await daemon.server.close();
    const running = await reset(dataDir);
    assert.equal(running.code, 1, running.stderr);
    assert.match(running.stderr, /INVALID_STATE/);
    assert.match(running.stderr, new RegExp(id));
    assert.ok((await run(['ip', 'netns', 'list'])).stdout.includes(`${PREFIX}-s`), 'nothing was removed');

    server = await serve({ dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX }, warmPool: 'off' });
    let call = apiCaller(() => server?.url, () => key);
    assert.equal((await call('POST', `/v1/sandboxes/${id}/pause`)).status, 200);
    await server.close();
    server = undefined;

    const done = await reset(dataDir);
    assert.equal(done.code, 0, done.stderr);
    const report = JSON.parse(done.stdout) as { prefix: string; namespaces: number };
    assert.equal(report.prefix, PREFIX);
    assert.ok(report.namespaces > 0, 'it found namespaces to remove');
    assert.deepEqual(await leftovers(PREFIX, dataDir, [`${PREFIX}_agent`, `${PREFIX}_ingress`]), [], 'no namespace, veth, table or container of the prefix is left');
    assert.deepEqual(await guardRules(), [], 'no ip rule on its slot range');

    server = await serve({ dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX }, warmPool: 'off' });
    call = apiCaller(() => server?.url, () => key);
    assert.equal((await call('POST', `/v1/sandboxes/${id}/resume`)).status, 200);
    await until(async () => (await call('GET', `/v1/sandboxes/${id}`)).json.state === 'running', 'the sandbox runs again');
    assert.equal((await shellCaller(call)(id, 'cat /root/mark')).trim(), 'before', 'its files carried over the reset');
    await stopRealDaemon(server, call);
    server = undefined;
  });
});
