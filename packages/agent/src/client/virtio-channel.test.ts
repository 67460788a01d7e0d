/** The host side of the virtio handshake against scripted agents on a real unix socket. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { encodeFrame, FrameDecoder } from '../protocol/framing.js';
import { encodeMarker, MarkerScanner } from '../protocol/virtio-handshake.js';
import { openVirtioChannel } from './virtio-channel.js';

let dir: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-virtio-channel-'));
});

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** A scripted agent: `onHello(socket, nonce, count)` runs for every HELLO it receives. */
async function scriptedAgent(name: string, onConnect: (socket: Socket) => void, onHello: (socket: Socket, nonce: Buffer, count: number) => void): Promise<{ path: string; server: Server }> {
  const path = join(dir, name);
  const server = createServer((socket) => {
    onConnect(socket);
    let scanner = new MarkerScanner('hello');
    let count = 0;
    socket.on('data', (chunk: Buffer) => {
      let rest: Buffer = chunk;
      for (;;) {
        const found = scanner.push(rest);
        if (!found) break;
        scanner = new MarkerScanner('hello');
        onHello(socket, found.nonce, ++count);
        rest = found.rest;
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return { path, server };
}

function firstMessage(socket: Socket): Promise<unknown> {
  const decoder = new FrameDecoder();
  return new Promise((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      const [m] = decoder.push(chunk);
      if (m !== undefined) resolve(m);
    });
    socket.resume();
  });
}

test('stale bytes and other ACKs before ours are skipped; the stream starts at the first frame after our ACK', async () => {
  const frame = { t: 'res', id: 7, r: { ok: true } };
  const agent = await scriptedAgent(
    'stale.sock',
    (socket) => socket.write(Buffer.concat([randomBytes(500), encodeMarker('ack', randomBytes(8)), encodeFrame({ t: 'out', sub: 1, fd: 1, off: 0, data: randomBytes(10) })])),
    (socket, nonce) => socket.write(Buffer.concat([randomBytes(33), encodeMarker('ack', nonce), encodeFrame(frame)])),
  );
  try {
    const channel = await openVirtioChannel(agent.path, { timeoutMs: 30_000 });
    assert.deepEqual(await firstMessage(channel), frame);
    channel.destroy();
  } finally {
    agent.server.close();
  }
});

test('a HELLO the agent never saw is repeated until one is answered', async () => {
  const agent = await scriptedAgent(
    'retry.sock',
    () => undefined,
    (socket, nonce, count) => {
      if (count >= 3) socket.write(encodeMarker('ack', nonce));
    },
  );
  try {
    const channel = await openVirtioChannel(agent.path, { timeoutMs: 30_000, firstRetryMs: 20, retryMs: 20 });
    channel.destroy();
  } finally {
    agent.server.close();
  }
});

test('a connection whose HELLOs get no ACK is given up after reconnectAfterMs; the next connection is answered', async () => {
  let connections = 0;
  const agent = await scriptedAgent(
    'reconnect.sock',
    () => connections++,
    // Like a guest that never heard "host came": it cannot answer on the first connection.
    (socket, nonce) => {
      if (connections >= 2) socket.write(encodeMarker('ack', nonce));
    },
  );
  try {
    const channel = await openVirtioChannel(agent.path, { timeoutMs: 30_000, firstRetryMs: 20, retryMs: 20, reconnectAfterMs: 200 });
    assert.equal(connections, 2);
    channel.destroy();
  } finally {
    agent.server.close();
  }
});

test('no answer, or no socket at all, gives AGENT_UNREACHABLE after the timeout', async () => {
  const silent = await scriptedAgent('silent.sock', () => undefined, () => undefined);
  try {
    await assert.rejects(openVirtioChannel(silent.path, { timeoutMs: 300, firstRetryMs: 50 }), { code: 'AGENT_UNREACHABLE', message: /no handshake answer/ });
  } finally {
    silent.server.close();
  }
  await assert.rejects(openVirtioChannel(join(dir, 'missing.sock'), { timeoutMs: 200 }), { code: 'AGENT_UNREACHABLE', message: /ENOENT/ });
});
