/**
 * End-to-end over the virtio-serial transport: the real agent (`serve --virtio-port ... --socket ...`)
 * on a real character device (a raw pty standing in for the port, see fake-virtio-port.ts) and the real
 * host client (`openVirtioChannel` + `connectAgent`) on the port's host socket. Hosts come and go, with
 * and without the guest noticing; processes, their output and files carry over.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { connectAgent, type AgentClient } from '../client/agent-client.js';
import { connectVirtioAgent, openVirtioChannel } from '../client/virtio-channel.js';
import { collector, eventually, startAgent, type AgentFixture } from '../test-support/agent-harness.js';
import { buildPtyPort, FAKE_VIRTIO_PORT_SKIP, startFakeVirtioPort, type FakeVirtioPort } from '../test-support/fake-virtio-port.js';

/** A safety bound so a broken agent fails the test instead of hanging the run. */
const LIMIT = { timeout: 180_000, skip: FAKE_VIRTIO_PORT_SKIP };

let dir: string;
let helper: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-virtio-test-'));
  if (!FAKE_VIRTIO_PORT_SKIP) helper = buildPtyPort(dir);
});

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function* once(data: Uint8Array): AsyncIterable<Uint8Array> {
  yield data;
}

async function readAll(client: AgentClient, path: string): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const chunk of client.readFile(path)) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

/** A fake port plus an agent serving it (and its usual socket), in a fresh directory. */
async function setUp(name: string, disconnects: 'seen-by-guest' | 'unseen-by-guest'): Promise<{ work: string; port: FakeVirtioPort; agent: AgentFixture }> {
  const work = join(dir, name);
  mkdirSync(work);
  const port = await startFakeVirtioPort({ dir: work, helper, disconnects });
  const agent = await startAgent({ args: ['--virtio-port', port.portPath, '--virtio-poll-ms', '20', '--virtio-stall-ms', '500'] });
  return { work, port, agent };
}

test('virtio: run a command, the host drops mid-stream, the next host reattaches; files work; the socket sees the same processes', LIMIT, async () => {
  const { work, port, agent } = await setUp('seen', 'seen-by-guest');
  try {
    const payload = randomBytes(3 * 1024 * 1024);
    const payloadPath = join(work, 'payload');
    writeFileSync(payloadPath, payload);
    const go = join(work, 'go');
    const cmd = `cat '${payloadPath}'; while [ ! -e '${go}' ]; do sleep 0.02; done; printf tail; exit 3`;

    // Host 1: start the command, then vanish after the first 64 KiB of its output.
    const channel1 = await openVirtioChannel(port.hostSocketPath, { timeoutMs: 60_000 });
    const host1 = await connectAgent(channel1);
    assert.equal((await host1.agentInfo()).protocol, 1);
    const seen: Buffer[] = [];
    let received = 0;
    const { pid } = await host1.start(
      { cmd },
      {
        onStdout: (chunk) => {
          if (channel1.destroyed) return;
          seen.push(Buffer.from(chunk));
          received += chunk.byteLength;
          if (received >= 64 * 1024) channel1.destroy();
        },
      },
    );
    await eventually(() => channel1.destroyed, 'host 1 saw output and dropped');
    assert.ok(received < payload.length, `host 1 dropped mid-stream (had ${received} of ${payload.length} bytes)`);
    assert.ok(seen.length > 0 && Buffer.concat(seen).equals(payload.subarray(0, received)));

    // Host 2: a new connection on the same port (the guest saw host 1 leave and reopened the port).
    const host2 = await connectVirtioAgent(port.hostSocketPath, { timeoutMs: 60_000 });
    assert.equal(port.hostConnections, 2);
    await eventually(async () => (await host2.listProcesses()).find((p) => p.pid === pid)?.stdoutBytes === payload.length, 'all output produced');
    const info = (await host2.listProcesses()).find((p) => p.pid === pid);
    assert.equal(info?.running, true);
    const rest = collector();
    const attached = await host2.attach(pid, { stdout: received, stderr: 0 }, rest.handlers);
    assert.deepEqual(attached.from, { stdout: received, stderr: 0 });
    await eventually(() => rest.stdout().length === payload.length - received, 'replayed output after the drop');
    writeFileSync(go, '');
    assert.deepEqual(await rest.exited, { exitCode: 3, signal: null, error: null });
    assert.ok(Buffer.concat([...seen, rest.stdout()]).equals(Buffer.concat([payload, Buffer.from('tail')])), 'output is exact across hosts');

    // Files over the port: binary data larger than one frame, both ways.
    const blob = randomBytes(2 * 1024 * 1024 + 77);
    const blobPath = join(work, 'uploaded.bin');
    assert.equal((await host2.writeFile(blobPath, once(blob))).size, blob.length);
    assert.ok(readFileSync(blobPath).equals(blob));
    assert.ok((await readAll(host2, payloadPath)).equals(payload));

    // The socket transport serves the same process table.
    const viaSocket = await agent.connect();
    assert.equal((await viaSocket.client.listProcesses()).find((p) => p.pid === pid)?.exitCode, 3);
    await viaSocket.client.close();

    // Host 2 leaves cleanly; host 3 still gets in.
    await host2.close();
    const host3 = await connectVirtioAgent(port.hostSocketPath, { timeoutMs: 60_000 });
    assert.equal((await host3.stat(blobPath)).size, blob.length);
    await host3.close();
    assert.equal(agent.log().match(/virtio: host connected/g)?.length, 3, agent.log());
  } finally {
    await agent.stop();
    await port.close();
  }
});

test('virtio: the guest never sees the host leave (a restore into a new QEMU) and half a frame is stuck in its input; the next host still gets a fresh connection', LIMIT, async () => {
  const { work, port, agent } = await setUp('unseen', 'unseen-by-guest');
  try {
    const stop = join(work, 'stop');
    const channel1 = await openVirtioChannel(port.hostSocketPath, { timeoutMs: 60_000 });
    const host1 = await connectAgent(channel1);
    // Output keeps flowing to host 1's subscription while it goes away, so stale frames are in flight.
    const out1 = collector();
    const { pid } = await host1.start({ cmd: `i=0; while [ ! -e '${stop}' ]; do echo "line $i"; i=$((i+1)); sleep 0.005; done; exit 0` }, out1.handlers);
    await eventually(() => out1.stdout().length > 1000, 'host 1 gets output');
    // Host 1 dies halfway through sending a frame: a header announcing 100000 bytes, then only 10.
    const half = Buffer.alloc(14);
    half.writeUInt32BE(100_000, 0);
    // End (FIN) rather than destroy: a reset while the port still writes output to host 1 could make the
    // port drop the half frame unread, and then there would be nothing stuck to test.
    await new Promise<void>((resolve) => {
      channel1.once('close', () => resolve());
      channel1.end(half);
    });

    // No reconnect: the guest must never see a host leave here.
    const host2 = await connectVirtioAgent(port.hostSocketPath, { timeoutMs: 60_000, firstRetryMs: 300, retryMs: 1500, reconnectAfterMs: 60_000 });
    assert.equal(port.hostConnections, 2);
    const procs = await host2.listProcesses();
    assert.equal(procs.find((p) => p.pid === pid)?.running, true);
    const all = collector();
    await host2.attach(pid, { stdout: 0, stderr: 0 }, all.handlers);
    writeFileSync(stop, '');
    assert.equal((await all.exited).exitCode, 0);
    const lines = all.stdout().toString().trimEnd().split('\n');
    assert.deepEqual(lines, lines.map((_, i) => `line ${i}`), 'host 2 sees exactly the process output, no stale frames');

    const blob = randomBytes(600_000);
    const blobPath = join(work, 'after-restore.bin');
    await host2.writeFile(blobPath, once(blob));
    assert.ok((await readAll(host2, blobPath)).equals(blob));
    assert.ok(existsSync(blobPath));
    await host2.close();
    assert.match(agent.log(), /dropping the host connection: a frame stopped arriving/);
    assert.doesNotMatch(agent.log(), /virtio: host connection ended/, 'the guest never saw a host leave');
  } finally {
    await agent.stop();
    await port.close();
  }
});

test('virtio: --virtio-port alone serves only the port', LIMIT, async () => {
  const work = join(dir, 'only');
  mkdirSync(work);
  const port = await startFakeVirtioPort({ dir: work, helper });
  const agent = await startAgent({ withSocket: false, args: ['--virtio-port', port.portPath] });
  try {
    const client = await connectVirtioAgent(port.hostSocketPath, { timeoutMs: 60_000 });
    assert.equal((await client.agentInfo()).protocol, 1);
    await client.close();
    assert.doesNotMatch(agent.log(), /listening on/);
  } finally {
    await agent.stop();
    await port.close();
  }
});
