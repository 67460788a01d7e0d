/**
 * End-to-end through a REAL daemon: `serve()` with the real store, snapshot storage, network
 * (namespaces, its own prefix), gVisor runtime and agent, driven over HTTP and WebSocket. The template
 * image is booted from the prepared base rootfs (`RAMIFY_TEST_ROOTFS`, made by scripts/run-tests.mjs).
 * Skipped, with the reason, when not root, without runsc, or without that rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_MAX_OUTPUT_BYTES, StreamChannel } from '@ramify/contracts';
import { WebSocket } from 'ws';
import { Sandbox } from '@ramify/sdk';
import { serve, type RamifyServer } from './serve.js';
import { apiCaller, realRuntimeSkip, registerRootfsTemplate, stopRealDaemon } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc']);

const PREFIX = 'rmfd';
let dataDir: string;
let server: RamifyServer | undefined;
let key = '';

const start = async (): Promise<RamifyServer> =>
  serve({ dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX }, coreOptions: { quietNetworkTimeoutMs: 2_000 } });

const call = apiCaller(() => server?.url, () => key);
const sh = async (id: string, cmd: string): Promise<string> => {
  const r = await call('POST', `/v1/sandboxes/${id}/commands`, { cmd });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.equal(r.json.exitCode, 0, r.json.stderr);
  return r.json.stdout as string;
};
/** Polls `check` every 100 ms until it holds; fails with `what` after `limitMs` (generous: CI machines are slow). */
const until = async (check: () => Promise<boolean>, what: string, limitMs = 30_000): Promise<void> => {
  for (const deadline = Date.now() + limitMs; !(await check()); await new Promise((resolve) => setTimeout(resolve, 100))) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
  }
};


describe('real daemon end to end (gVisor, namespaces, agent)', { skip, timeout: 600_000 }, () => {
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-daemon-e2e-'));
    server = await start();
    key = server.newApiKey ?? '';
    assert.deepEqual(server.core.runtimes.map((r) => r.name), ['gvisor']);
    await registerRootfsTemplate(server.core, rootfs as string, { templateId: 'tpl_e2e', snapshotId: 'snap_e2e_base' });
  });
  after(async () => {
    if (server) await stopRealDaemon(server, call);
    await rm(dataDir, { recursive: true, force: true });
  });

  test('create, exec, files, pause keeps memory and processes, resume, fork re-seeds identity, named snapshot (with its autoPause)', async () => {
    const created = await call('POST', '/v1/sandboxes', { timeoutMs: 600_000 });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const id = created.json.id as string;
    assert.equal((await sh(id, 'hostname')).trim(), id.toLowerCase().replace('_', '-'));
    await sh(id, 'echo kept > /root/note.txt');
    await call('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'i=0; while true; do i=$((i+1)); echo $i > /tmp/counter.new; mv /tmp/counter.new /tmp/counter; sleep 0.1; done', background: true });
    const counterNow = async (): Promise<number> => Number((await sh(id, 'cat /tmp/counter 2>/dev/null || echo 0')).trim());
    let before = 0;
    await until(async () => (before = await counterNow()) >= 3, 'the counter process has counted to 3');

    const paused = await call('POST', `/v1/sandboxes/${id}/pause`);
    assert.equal(paused.status, 200, JSON.stringify(paused.json));
    assert.equal(paused.json.state, 'paused');
    const refused = await call('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'true' });
    assert.equal(refused.status, 409);
    const frozen = Number((await readdir(join(dataDir, 'snapshots'))).length);
    assert.ok(frozen >= 2, 'template and pause images on disk');
    assert.equal((await call('POST', `/v1/sandboxes/${id}/resume`)).json.state, 'running');
    const [counter, note] = (await sh(id, 'cat /tmp/counter; cat /root/note.txt')).trim().split('\n');
    assert.ok(Number(counter) >= before, `the counter process kept its memory (${counter} after resume, ${before} before the pause)`);
    await until(async () => (await counterNow()) > Number(counter), 'the resumed counter process counts on');
    assert.equal(note, 'kept');

    const fork = await call('POST', `/v1/sandboxes/${id}/fork`, { count: 2 });
    assert.equal(fork.status, 201, JSON.stringify(fork.json));
    const randoms = new Set<string>();
    for (const child of fork.json.sandboxes as Array<{ id: string; parentId: string }>) {
      assert.equal(child.parentId, id);
      assert.equal((await sh(child.id, 'cat /root/note.txt')).trim(), 'kept');
      assert.equal((await sh(child.id, 'hostname')).trim(), child.id.toLowerCase().replace('_', '-'));
      randoms.add(await sh(child.id, 'head -c 16 /dev/urandom | od -An -tx1'));
    }
    randoms.add(await sh(id, 'head -c 16 /dev/urandom | od -An -tx1'));
    assert.equal(randoms.size, 3, 'forks do not produce the same random numbers');

    assert.equal((await call('PUT', `/v1/sandboxes/${id}/auto-pause`, { autoPause: { idleMs: 600_000 } })).status, 200);
    const snap = await call('POST', `/v1/sandboxes/${id}/snapshots`, { name: 'e2e-snap' });
    assert.equal(snap.status, 201, JSON.stringify(snap.json));
    assert.deepEqual(snap.json.autoPause, { idleMs: 600_000 }, 'the snapshot records autoPause');
    const clone = await call('POST', '/v1/sandboxes', { snapshot: 'e2e-snap' });
    assert.equal(clone.status, 201, JSON.stringify(clone.json));
    assert.deepEqual(clone.json.autoPause, { idleMs: 600_000 }, "a sandbox from the snapshot starts with the snapshot's autoPause");
    assert.equal((await sh(clone.json.id, 'cat /root/note.txt')).trim(), 'kept');
    for (const s of [...fork.json.sandboxes, clone.json]) assert.equal((await call('DELETE', `/v1/sandboxes/${s.id}`)).status, 204);
  });

  test('pausing while a loop keeps opening connections never loses the sandbox: it pauses or is refused, and the loop runs on', async () => {
    // Only a denied destination (a documentation address; the policy drops it on the host): nothing leaves.
    const { json } = await call('POST', '/v1/sandboxes', { egress: ['allowed.test'], timeoutMs: 600_000 });
    const id = json.id as string;
    await call('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'while true; do curl -s -m 1 -o /dev/null http://203.0.113.9:8080/; echo x >> /tmp/tries; done', background: true });
    const tries = async (): Promise<number> => Number((await sh(id, 'wc -l < /tmp/tries 2>/dev/null || echo 0')).trim());
    await until(async () => (await tries()) >= 1, 'the loop has tried once');
    for (let i = 0; i < 4; i++) {
      const paused = await call('POST', `/v1/sandboxes/${id}/pause`);
      if (paused.status === 200) assert.equal((await call('POST', `/v1/sandboxes/${id}/resume`)).json.state, 'running');
      else assert.equal(paused.json.error?.code, 'CHECKPOINT_BLOCKED', JSON.stringify(paused.json));
      assert.equal((await call('GET', `/v1/sandboxes/${id}`)).json.state, 'running');
    }
    const before = await tries();
    await until(async () => (await tries()) > before, 'the loop goes on (its processes were continued)');
    assert.equal((await sh(id, "ps -eo stat,args | grep -c '^T' || true")).trim(), '0', 'no process is left stopped');
    assert.equal((await call('DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });

  test('a connection the sandbox closed first (TIME_WAIT, invisible inside) does not hold the pause up: runsc resets it', async () => {
    // The denied port-80 destination ends at the host's egress proxy (nothing leaves the host).
    const { json } = await call('POST', '/v1/sandboxes', { egress: ['allowed.test'], timeoutMs: 600_000 });
    const id = json.id as string;
    assert.equal((await sh(id, "bash -c 'exec 3<>/dev/tcp/192.0.2.10/80; exec 3>&-; echo closed'")).trim(), 'closed');
    // Less the agent's own port (49982 = C33E): its listener and the host's channel.
    assert.equal((await sh(id, "grep -v ':C33E ' /proc/net/tcp | wc -l")).trim(), '1', '/proc/net/tcp lists no connection (header only)');
    const paused = await call('POST', `/v1/sandboxes/${id}/pause`);
    assert.equal(paused.status, 200, JSON.stringify(paused.json));
    assert.equal((await call('POST', `/v1/sandboxes/${id}/resume`)).json.state, 'running');
    assert.equal((await sh(id, 'echo kept')).trim(), 'kept');
    assert.equal((await call('DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });

  test('a WebSocket command stream against the real agent', async () => {
    const { json } = await call('POST', '/v1/sandboxes', {});
    const ws = new WebSocket(`${server?.url.replace('http', 'ws')}/v1/sandboxes/${json.id}/commands/stream`, { headers: { authorization: `Bearer ${key}` } });
    const frames: Array<string | Buffer> = [];
    const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
    ws.on('message', (data, isBinary) => frames.push(isBinary ? (data as Buffer) : data.toString()));
    await new Promise((resolve) => ws.on('open', resolve));
    ws.send(JSON.stringify({ type: 'start', request: { cmd: 'read line; echo "got $line"', stdin: true } }));
    ws.send(Buffer.concat([Buffer.from([StreamChannel.stdin]), Buffer.from('hello\n')]));
    assert.equal(await closed, 1000);
    const started = JSON.parse(frames[0] as string);
    assert.deepEqual(started, { type: 'started', pid: started.pid, maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES }, 'started comes first, with the result limit');
    const out = frames.filter(Buffer.isBuffer).map((f) => f.subarray(1).toString()).join('');
    assert.equal(out, 'got hello\n');
    assert.equal(JSON.parse(frames.at(-1) as string).exitCode, 0);
  });

  test('stdin data given to commands.run arrives whole though the sandbox pauses and resumes between its chunks (SDK)', async () => {
    const sbx = await Sandbox.create({ template: 'tpl_e2e', apiUrl: server!.url, apiKey: key, requestTimeoutMs: 600_000 });
    try {
      let resumed: Promise<unknown> | undefined;
      async function* chunks(): AsyncIterable<string> {
        yield 'first\n';
        await sbx.pause(); // The next chunk and the close meet a paused, then a resuming, sandbox.
        resumed = sbx.resume();
        yield 'second\n';
      }
      // Before stdin-feed.ts the refused chunk and close were dropped: `cat` waited for EOF forever.
      const result = await sbx.commands.run('cat', { stdin: chunks(), timeoutMs: 120_000 });
      assert.equal(result.stdout, 'first\nsecond\n');
      await resumed;
    } finally {
      await sbx.kill();
    }
  });

  test('open TCP connections refuse the pause (409 CHECKPOINT_BLOCKED) and the sandbox keeps running; a restart re-attaches it', async () => {
    const { json } = await call('POST', '/v1/sandboxes', {});
    const id = json.id as string;
    const node = "const n=require('net');n.createServer(()=>{}).listen(9000,'0.0.0.0',()=>n.connect(9000,'10.254.0.2',()=>require('fs').writeFileSync('/tmp/connected','')))";
    await call('POST', `/v1/sandboxes/${id}/commands`, { cmd: `node -e "${node}"`, background: true });
    await until(async () => (await sh(id, 'test -e /tmp/connected && echo yes || echo no')).trim() === 'yes', 'the TCP connection is open');
    const blocked = await call('POST', `/v1/sandboxes/${id}/pause`);
    assert.equal(blocked.status, 409);
    assert.equal(blocked.json.error.code, 'CHECKPOINT_BLOCKED');
    assert.match(blocked.json.error.message, /:9000/);
    assert.equal((await call('GET', `/v1/sandboxes/${id}`)).json.state, 'running');
    assert.equal((await sh(id, 'echo alive')).trim(), 'alive');

    await server?.close();
    server = await start();
    assert.equal(server.newApiKey, null);
    assert.equal((await sh(id, 'echo still alive')).trim(), 'still alive');
    assert.equal((await call('DELETE', `/v1/sandboxes/${id}`)).status, 204);
    assert.equal((await server.core.runtimes[0].list()).includes(id), false, 'the runtime instance is gone');
  });
});
