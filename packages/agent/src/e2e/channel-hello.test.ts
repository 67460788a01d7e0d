/**
 * The channel hello end to end (protocol/channel-hello.ts, server/channel-key.ts): a real agent server
 * with a TCP port admits nobody before a host set its key through the unix socket, then only hellos that
 * show the current key; each hello may name the next key, after which the old one opens nothing.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { connectAgent } from '../client/agent-client.js';
import { encodeFrame } from '../protocol/framing.js';
import { encodeHello, HELLO_ACCEPTED } from '../protocol/channel-hello.js';
import { startAgent, type AgentFixture } from '../test-support/agent-harness.js';

let agent: AgentFixture;
const port = randomInt(20_000, 60_000);

before(async () => {
  agent = await startAgent({ args: ['--tcp-port', String(port)] });
});
after(async () => {
  await agent.stop();
});

function open(where: { path: string } | { port: number; host: string }): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(where as { path: string });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}
const tcp = (): Promise<Socket> => open({ port, host: '127.0.0.1' });
const unix = (): Promise<Socket> => open({ path: agent.socketPath });

/** Write `bytes` and read the first byte back: the answer, or null when the agent closed the connection. */
function exchange(socket: Socket, bytes: Buffer): Promise<number | null> {
  return new Promise((resolve) => {
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      if (chunk.length > 1) socket.unshift(chunk.subarray(1));
      resolve(chunk[0]!);
    });
    socket.once('close', () => resolve(null));
    socket.on('error', () => undefined);
    socket.write(bytes);
  });
}

async function pingsAfter(socket: Socket): Promise<void> {
  const client = await connectAgent(socket, { pingTimeoutMs: 10_000 });
  await client.ping();
  await client.close();
}

const k1 = randomBytes(32);
const k2 = randomBytes(32);

test('the TCP port admits nobody before a key was set', async () => {
  assert.equal(await exchange(await tcp(), encodeHello({ key: Buffer.alloc(32), nextKey: k1 })), null);
});

test('a hello on the unix socket sets the key unchecked; the agent protocol follows on the same connection', async () => {
  const s = await unix();
  assert.equal(await exchange(s, encodeHello({ key: Buffer.alloc(32), nextKey: k1 })), HELLO_ACCEPTED);
  await pingsAfter(s);
});

test('the unix socket still takes a connection that starts with a frame (no hello)', async () => {
  await pingsAfter(await unix());
});

test('TCP admits only the current key, and a named next key replaces it', async () => {
  assert.equal(await exchange(await tcp(), encodeHello({ key: k2, nextKey: null })), null, 'a wrong key');
  assert.equal(await exchange(await tcp(), encodeFrame({ t: 'req', id: 1, m: 'ping', p: {} })), null, 'a frame without a hello');
  const s = await tcp();
  assert.equal(await exchange(s, encodeHello({ key: k1, nextKey: k2 })), HELLO_ACCEPTED);
  await pingsAfter(s);
  assert.equal(await exchange(await tcp(), encodeHello({ key: k1, nextKey: null })), null, 'the replaced key');
  const again = await tcp();
  assert.equal(await exchange(again, encodeHello({ key: k2, nextKey: null })), HELLO_ACCEPTED);
  await pingsAfter(again);
});
