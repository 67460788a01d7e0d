/**
 * Checkpoints never lose a sandbox, through a REAL daemon (gVisor runsc 20240729, namespaces, agent):
 * servers whose TCP listeners sit in epoll (Node `http`, Python `asyncio`; runsc 20221219 panicked on
 * them and lost the sandbox) survive pause/resume, fork x2, a named snapshot and the timeout pause, and
 * serve afterwards (a connection left in TIME_WAIT is reset; an established one refuses the pause with
 * CHECKPOINT_BLOCKED and the sandbox serves on); a checkpoint that fails (its image cannot be written)
 * never loses the sandbox (runsc stops it: it is restored from its last image, and the error says so); a sandbox whose runsc processes are
 * killed from outside is failed at once (SANDBOX_FAILED), never left `running` with 20 s timeouts.
 * Skipped, with the reason, when not root, without runsc, or without the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, type RamifyServer } from './serve.js';
import { apiCaller, realRuntimeSkip, registerRootfsTemplate, shellCaller, stopRealDaemon, until } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc', 'nsenter', 'curl']);

const PREFIX = 'rmck';
let dataDir: string;
let server: RamifyServer | undefined;
let key = '';

const call = apiCaller(() => server?.url, () => key);
const sh = shellCaller(call);

const ASYNCIO_SERVER = `import asyncio
async def handle(reader, writer):
    await reader.read(1024)
    writer.write(b"HTTP/1.0 200 OK\\r\\n\\r\\nasyncio-ok")
    await writer.drain()
    writer.close()
async def main():
    server = await asyncio.start_server(handle, "0.0.0.0", 8000)
    await server.serve_forever()
asyncio.run(main())
`;
const NODE_SERVER = `require('http').createServer((q, s) => s.end('node-ok')).listen(8001, '0.0.0.0')`;

/** Start both servers in `id` and wait until they answer. */
async function startServers(id: string): Promise<void> {
  const put = await fetch(`${server?.url}/v1/sandboxes/${id}/files?path=/root/server.py`, { method: 'PUT', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' }, body: ASYNCIO_SERVER });
  assert.equal(put.status, 200);
  await call('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'python3 /root/server.py', background: true });
  await call('POST', `/v1/sandboxes/${id}/commands`, { cmd: `node -e "${NODE_SERVER}"`, background: true });
  await until(async () => (await servedInside(id)) === 'asyncio-ok node-ok', 'both servers answer', 60_000);
}

/** What both servers answer to a request from inside the sandbox (loopback). */
async function servedInside(id: string): Promise<string> {
  const r = await call('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'echo "$(curl -s -m 5 localhost:8000) $(curl -s -m 5 localhost:8001)"' });
  return String(r.json.stdout ?? '').trim();
}

/** The sandbox's router namespace and guest address: a request from there crosses the sandbox's network card. */
async function outside(id: string): Promise<{ routerNs: string; guest: string }> {
  const record = await server!.core.store.getSandbox(id);
  const network = server!.core.network as unknown as { names(slot: number): { routerNs: string }; layout: { guestAddress: string } };
  return { routerNs: `/var/run/netns/${network.names(record!.slot!).routerNs}`, guest: network.layout.guestAddress };
}

/** A request to the Node server from outside the sandbox (the sandbox side then holds the connection in TIME_WAIT). */
async function servedOutside(id: string): Promise<string> {
  const { routerNs, guest } = await outside(id);
  return spawnSync('nsenter', [`--net=${routerNs}`, 'curl', '-s', '-m', '5', `http://${guest}:8001/`], { encoding: 'utf8' }).stdout;
}

/** Whether /proc/net/tcp text shows an established connection to local port 8000 (the host's own agent channel is another). */
const heldTo8000 = (procNetTcp: string): boolean => procNetTcp.split('\n').some((line) => /^\s*\d+: [0-9A-F]{8}:1F40 \S+ 01 /.test(line));

describe('real checkpoints of sandboxes that serve TCP (gVisor)', { skip, timeout: 900_000 }, () => {
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-checkpoint-e2e-'));
    server = await serve({ dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX } });
    key = server.newApiKey ?? '';
    await registerRootfsTemplate(server.core, rootfs as string, { templateId: 'tpl_ck', snapshotId: 'snap_ck_base' });
  });
  after(async () => {
    spawnSync('umount', [join(dataDir, 'snapshots', 'snap_ck_base')]);
    spawnSync('umount', [join(dataDir, 'snapshots')]);
    if (server) await stopRealDaemon(server, call);
    await rm(dataDir, { recursive: true, force: true });
  });

  test('Node http and asyncio servers survive pause/resume, fork x2 and a named snapshot, and serve afterwards', async () => {
    const { json } = await call('POST', '/v1/sandboxes', { timeoutMs: 600_000 });
    const id = json.id as string;
    await startServers(id);
    assert.equal(await servedOutside(id), 'node-ok', 'served across the network card (leaves a TIME_WAIT connection)');
    // An established connection from outside: the pause is refused (resetting it could leave the server
    // unable to accept after a later restore) and the sandbox serves on; once it closes, the pause goes through.
    const { routerNs, guest } = await outside(id);
    const held = spawn('nsenter', [`--net=${routerNs}`, 'bash', '-c', `exec 3<>/dev/tcp/${guest}/8000; sleep 600`], { stdio: 'ignore' });
    try {
      await until(async () => heldTo8000(await sh(id, 'cat /proc/net/tcp')), 'the held connection is established');
      const blocked = await call('POST', `/v1/sandboxes/${id}/pause`);
      assert.equal(blocked.status, 409, JSON.stringify(blocked.json));
      assert.equal(blocked.json.error.code, 'CHECKPOINT_BLOCKED');
      assert.match(blocked.json.error.message, /:8000/, 'the message names the connection');
      assert.equal((await call('GET', `/v1/sandboxes/${id}`)).json.state, 'running');
      assert.equal(await servedInside(id), 'asyncio-ok node-ok', 'served while the pause was refused');
    } finally {
      held.kill();
    }
    // The Node request above left a TIME_WAIT connection in the sandbox: it does not hold the pause up.
    await until(async () => !heldTo8000(await sh(id, 'cat /proc/net/tcp')), 'the held connection is gone');
    const paused = await call('POST', `/v1/sandboxes/${id}/pause`);
    assert.equal(paused.status, 200, JSON.stringify(paused.json));
    assert.equal((await call('POST', `/v1/sandboxes/${id}/resume`)).json.state, 'running');
    assert.equal(await servedInside(id), 'asyncio-ok node-ok', 'served after resume');
    assert.equal(await servedOutside(id), 'node-ok', 'served from outside after resume');

    const fork = await call('POST', `/v1/sandboxes/${id}/fork`, { count: 2 });
    assert.equal(fork.status, 201, JSON.stringify(fork.json));
    assert.equal((await call('GET', `/v1/sandboxes/${id}`)).json.state, 'running', 'the parent runs on');
    for (const child of fork.json.sandboxes as Array<{ id: string }>) {
      assert.equal(await servedInside(child.id), 'asyncio-ok node-ok', `fork ${child.id} serves`);
      assert.equal(await servedOutside(child.id), 'node-ok');
    }
    assert.equal(await servedInside(id), 'asyncio-ok node-ok', 'the parent serves after the fork');

    const snap = await call('POST', `/v1/sandboxes/${id}/snapshots`, { name: 'servers' });
    assert.equal(snap.status, 201, JSON.stringify(snap.json));
    assert.equal((await call('GET', `/v1/sandboxes/${id}`)).json.state, 'running', 'the snapshot keeps the sandbox running');
    const clone = await call('POST', '/v1/sandboxes', { snapshot: 'servers' });
    assert.equal(clone.status, 201, JSON.stringify(clone.json));
    assert.equal(await servedInside(clone.json.id), 'asyncio-ok node-ok', 'a sandbox made from the snapshot serves');
    for (const s of [id, clone.json.id, ...fork.json.sandboxes.map((c: { id: string }) => c.id)]) assert.equal((await call('DELETE', `/v1/sandboxes/${s}`)).status, 204);
  });

  test('the timeout pause of a serving sandbox succeeds; after resume the servers serve', async () => {
    const { json } = await call('POST', '/v1/sandboxes', { timeoutMs: 600_000 });
    const id = json.id as string;
    await startServers(id);
    assert.equal(await servedOutside(id), 'node-ok');
    assert.equal((await call('POST', `/v1/sandboxes/${id}/timeout`, { timeoutMs: 1_000 })).status, 200);
    await until(async () => (await call('GET', `/v1/sandboxes/${id}`)).json.state === 'paused', 'the deadline paused it', 60_000);
    assert.equal((await call('POST', `/v1/sandboxes/${id}/resume`, { timeoutMs: 600_000 })).json.state, 'running');
    assert.equal(await servedInside(id), 'asyncio-ok node-ok');
    assert.equal((await call('DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });

  test('a checkpoint with no room for its image never loses the sandbox: refused with NO_SPACE, it runs on with its processes and files', async () => {
    const { json } = await call('POST', '/v1/sandboxes', { timeoutMs: 600_000 });
    const id = json.id as string;
    await startServers(id);
    await sh(id, 'echo kept > /root/note.txt');
    // Snapshot images go under <dataDir>/snapshots: a 64 KiB filesystem there cannot hold a new one (the
    // template's image stays reachable through a bind mount: a full disk still reads what it has).
    const snapshots = join(dataDir, 'snapshots');
    const template = join(snapshots, 'snap_ck_base');
    const kept = await mkdtemp(join(tmpdir(), 'ramify-ck-kept-'));
    execFileSync('mount', ['--bind', template, kept]);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'ramify-test-full', snapshots]);
    let failed;
    try {
      await mkdir(template);
      execFileSync('mount', ['--bind', kept, template]);
      failed = await call('POST', `/v1/sandboxes/${id}/pause`);
    } finally {
      spawnSync('umount', [template]);
      execFileSync('umount', [snapshots]);
      execFileSync('umount', [kept]);
      await rm(kept, { recursive: true, force: true });
    }
    // The runtime sees the image cannot fit before runsc writes it (runsc 20240729 would stop the sandbox).
    assert.equal(failed.status, 507, JSON.stringify(failed.json));
    assert.equal(failed.json.error.code, 'NO_SPACE');
    assert.match(failed.json.error.message, /no space left on device.*keeps running|keeps running.*no space left on device/i);
    assert.equal((await call('GET', `/v1/sandboxes/${id}`)).json.state, 'running');
    assert.equal((await sh(id, 'echo usable')).trim(), 'usable');
    assert.equal((await sh(id, 'cat /root/note.txt')).trim(), 'kept');
    assert.equal(await servedInside(id), 'asyncio-ok node-ok', 'its processes run on');
    // With room again, the same sandbox pauses and resumes.
    assert.equal((await call('POST', `/v1/sandboxes/${id}/pause`)).json.state, 'paused');
    assert.equal((await call('POST', `/v1/sandboxes/${id}/resume`)).json.state, 'running');
    assert.equal((await sh(id, 'echo again')).trim(), 'again');
    assert.equal((await call('DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });

  test('runsc processes killed from outside: the call waiting on the sandbox and the next one fail with SANDBOX_FAILED, the sandbox is error', async () => {
    const { json } = await call('POST', '/v1/sandboxes', { timeoutMs: 600_000 });
    const id = json.id as string;
    assert.equal((await sh(id, 'echo up')).trim(), 'up');
    const waiting = call('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'sleep 300' });
    await until(async () => (await call('GET', `/v1/sandboxes/${id}/processes`)).json.processes.some((p: { cmd: string }) => p.cmd === 'sleep 300'), 'the command runs');
    const killedAt = Date.now();
    spawnSync('pkill', ['-KILL', '-f', `runsc-(sandbox|gofer) .*${id}`]);
    const answer = await waiting;
    assert.equal(answer.json.error?.code, 'SANDBOX_FAILED', JSON.stringify(answer.json));
    const info = (await call('GET', `/v1/sandboxes/${id}`)).json;
    assert.equal(info.state, 'error');
    assert.match(info.error, /stopped unexpectedly/);
    const next = await call('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'true' });
    assert.equal(next.json.error?.code, 'SANDBOX_FAILED');
    // A figure for the log, not an assertion: how long the kill took to become `error` (the monitor polls every second).
    console.log(`# runsc killed -> the waiting call failed after ${Date.now() - killedAt} ms`);
    assert.equal((await call('DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });
});
