/** The virtio link's handshake and framing, driven over a real unix socket pair. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { after, before, test } from 'node:test';
import { encodeFrame, MAX_FRAME_BYTES } from '../protocol/framing.js';
import { encodeMarker } from '../protocol/virtio-handshake.js';
import { eventually } from '../test-support/agent-harness.js';
import { HostLink, type HostLinkOptions } from './host-link.js';

let dir: string;
let server: Server;
let nextLink: ((port: Socket) => void) | undefined;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-host-link-'));
  server = createServer((port) => nextLink?.(port));
  await new Promise<void>((resolve) => server.listen(join(dir, 'port.sock'), resolve));
});

after(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

interface Pair {
  host: Socket;
  link: HostLink;
  /** Each session's channel and the bytes it received. */
  sessions: Array<{ channel: Duplex; received: Buffer[]; closed: boolean }>;
  /** All bytes the host received so far. */
  hostBytes: () => Buffer;
  logs: string[];
}

async function pair(stallMs = 5000, onPortEnd?: HostLinkOptions['onPortEnd']): Promise<Pair> {
  const sessions: Pair['sessions'] = [];
  const logs: string[] = [];
  const linked = new Promise<HostLink>((resolve) => {
    nextLink = (port) =>
      resolve(
        new HostLink(port, {
          stallMs,
          onPortEnd,
          log: (line) => logs.push(line),
          startSession: (channel) => {
            const s = { channel, received: [] as Buffer[], closed: false };
            channel.on('data', (d: Buffer) => s.received.push(d));
            channel.on('close', () => {
              s.closed = true;
            });
            sessions.push(s);
          },
        }),
      );
  });
  const host = connect(join(dir, 'port.sock'));
  const got: Buffer[] = [];
  host.on('data', (d: Buffer) => got.push(d));
  const link = await linked;
  return { host, link, sessions, hostBytes: () => Buffer.concat(got), logs };
}

const bytesOf = (s: { received: Buffer[] }): Buffer => Buffer.concat(s.received);

test('bytes before a HELLO are dropped, the ACK goes out first, frames pass whole both ways', async () => {
  const p = await pair();
  const n1 = randomBytes(8);
  const frameA = encodeFrame({ t: 'req', id: 1, m: 'ping', p: { pad: randomBytes(1000) } });
  p.host.write(Buffer.concat([randomBytes(300), encodeMarker('ack', randomBytes(8)), Buffer.from([0xff, 0xff, 0xff])]));
  p.host.write(encodeMarker('hello', n1).subarray(0, 5));
  p.host.write(Buffer.concat([encodeMarker('hello', n1).subarray(5), frameA.subarray(0, 2)]));
  p.host.write(frameA.subarray(2, 700));
  p.host.write(frameA.subarray(700));
  await eventually(() => p.sessions.length === 1 && bytesOf(p.sessions[0]).length === frameA.length, 'frame A delivered');
  assert.deepEqual(bytesOf(p.sessions[0]), frameA);
  const frameB = encodeFrame({ t: 'res', id: 1, r: {} });
  p.sessions[0].channel.write(frameB);
  await eventually(() => p.hostBytes().length === 16 + frameB.length, 'ACK and frame B at the host');
  assert.deepEqual(p.hostBytes(), Buffer.concat([encodeMarker('ack', n1), frameB]));
  p.host.destroy();
  await p.link.closed;
  assert.equal(p.sessions[0].closed, true);
});

test('a repeated HELLO keeps the connection; a new one at a frame boundary replaces it', async () => {
  const p = await pair();
  const [n1, n2] = [randomBytes(8), randomBytes(8)];
  const [a, b, c] = [1, 2, 3].map((id) => encodeFrame({ t: 'req', id, m: 'ping', p: {} }));
  p.host.write(Buffer.concat([encodeMarker('hello', n1), encodeMarker('hello', n1), a, encodeMarker('hello', n1), b]));
  await eventually(() => p.sessions.length === 1 && bytesOf(p.sessions[0]).length === a.length + b.length, 'a and b delivered');
  assert.deepEqual(bytesOf(p.sessions[0]), Buffer.concat([a, b]));
  p.host.write(Buffer.concat([encodeMarker('hello', n2), c]));
  await eventually(() => p.sessions.length === 2 && bytesOf(p.sessions[1]).length === c.length, 'c delivered to a new session');
  assert.equal(p.sessions[0].closed, true);
  assert.deepEqual(bytesOf(p.sessions[1]), c);
  assert.equal(p.link.connected, true);
  await eventually(() => p.hostBytes().length === 32, 'two ACKs');
  assert.deepEqual(p.hostBytes(), Buffer.concat([encodeMarker('ack', n1), encodeMarker('ack', n2)]));
  p.host.destroy();
  await p.link.closed;
});

test('a frame that stops arriving midway is dropped after stallMs; the next HELLO is found', async () => {
  const p = await pair(100);
  const header = Buffer.alloc(4);
  header.writeUInt32BE(100_000);
  p.host.write(Buffer.concat([encodeMarker('hello', randomBytes(8)), header, randomBytes(10)]));
  await eventually(() => p.sessions[0]?.closed === true, 'stalled session dropped');
  assert.equal(p.link.connected, false);
  assert.match(p.logs.join('\n'), /stopped arriving/);
  const frame = encodeFrame({ t: 'req', id: 9, m: 'ping', p: {} });
  p.host.write(Buffer.concat([randomBytes(50), encodeMarker('hello', randomBytes(8)), frame]));
  await eventually(() => p.sessions.length === 2 && bytesOf(p.sessions[1]).length === frame.length, 'fresh session');
  assert.deepEqual(bytesOf(p.sessions[1]), frame);
  p.host.destroy();
  await p.link.closed;
});

test('an oversized frame length or an ACK from the host drops the connection', async () => {
  const p = await pair();
  const tooBig = Buffer.alloc(4);
  tooBig.writeUInt32BE(MAX_FRAME_BYTES + 1);
  p.host.write(Buffer.concat([encodeMarker('hello', randomBytes(8)), tooBig]));
  await eventually(() => p.sessions[0]?.closed === true, 'dropped on an oversized length');
  p.host.write(Buffer.concat([encodeMarker('hello', randomBytes(8)), encodeMarker('ack', randomBytes(8))]));
  await eventually(() => p.sessions[1]?.closed === true, 'dropped on an ACK');
  p.host.write(encodeMarker('hello', randomBytes(8)));
  await eventually(() => p.sessions.length === 3 && p.link.connected, 'a third session');
  p.host.end();
  await p.link.closed;
  assert.equal(p.sessions[2].closed, true);
});

test('a connection that gives up on its own lets the link hunt for the next HELLO', async () => {
  const p = await pair();
  p.host.write(encodeMarker('hello', randomBytes(8)));
  await eventually(() => p.sessions.length === 1, 'session');
  p.sessions[0].channel.destroy();
  await eventually(() => !p.link.connected, 'link noticed');
  p.host.write(Buffer.concat([Buffer.from('garbage'), encodeMarker('hello', randomBytes(8))]));
  await eventually(() => p.sessions.length === 2, 'second session');
  p.host.destroy();
  await p.link.closed;
});

test('an EOF the port goes on from keeps the session: frames on the continued port reach it, its writes leave there', async () => {
  const n1 = randomBytes(8);
  const [a, b] = [1, 2].map((id) => encodeFrame({ t: 'req', id, m: 'ping', p: {} }));
  const path = join(dir, 'port.sock');
  let second: Socket | undefined;
  const secondGot: Buffer[] = [];
  // The "continued port" is a second connection; its first 3 bytes count as already read (`initial`).
  const p = await pair(5000, async () => {
    if (second) return undefined; // The second EOF is the end.
    return new Promise((resolve) => {
      nextLink = (port) => resolve({ port, initial: b.subarray(0, 3) });
      second = connect(path);
      second.on('data', (d: Buffer) => secondGot.push(d));
    });
  });
  p.host.write(Buffer.concat([encodeMarker('hello', n1), a]));
  await eventually(() => p.sessions.length === 1 && bytesOf(p.sessions[0]).length === a.length, 'a delivered');
  p.host.end();
  await eventually(() => second?.readyState === 'open', 'the port went on');
  second?.write(b.subarray(3));
  await eventually(() => bytesOf(p.sessions[0]).length === a.length + b.length, 'b delivered to the same session');
  assert.deepEqual(bytesOf(p.sessions[0]), Buffer.concat([a, b]));
  assert.equal(p.sessions.length, 1);
  assert.equal(p.sessions[0].closed, false);
  const reply = encodeFrame({ t: 'res', id: 2, r: {} });
  p.sessions[0].channel.write(reply);
  await eventually(() => Buffer.concat(secondGot).equals(reply), 'the reply leaves on the continued port');
  assert.equal(p.link.connected, true);
  assert.ok(!p.logs.some((line) => /host connection ended/.test(line)), p.logs.join('\n'));
  second?.destroy();
  await p.link.closed;
  await eventually(() => p.sessions[0].closed, 'the session closed');
});

test('a second EOF hands onPortEnd the continued port, not the first one (whose fd was given up)', async () => {
  const path = join(dir, 'port.sock');
  const ended: Duplex[] = [];
  const continued: Socket[] = [];
  const hosts: Socket[] = [];
  const p = await pair(5000, async (port) => {
    ended.push(port);
    if (continued.length === 2) return undefined; // The third EOF is the end.
    return new Promise((resolve) => {
      nextLink = (next) => {
        continued.push(next);
        resolve({ port: next });
      };
      hosts.push(connect(path));
    });
  });
  p.host.write(encodeMarker('hello', randomBytes(8)));
  await eventually(() => p.sessions.length === 1, 'session');
  p.host.end();
  await eventually(() => continued.length === 1, 'the port went on once');
  hosts[0].end();
  await eventually(() => continued.length === 2, 'the port went on twice');
  hosts[1].end();
  await p.link.closed;
  assert.equal(ended.length, 3);
  assert.equal(ended[1], continued[0], 'the second EOF is reported on the first continued port');
  assert.equal(ended[2], continued[1], 'the third EOF is reported on the second continued port');
  assert.equal(p.sessions.length, 1, 'one session across both stale EOFs');
});

test('an EOF the port does not go on from ends the link', async () => {
  const p = await pair(5000, async () => undefined);
  p.host.write(encodeMarker('hello', randomBytes(8)));
  await eventually(() => p.sessions.length === 1, 'session');
  p.host.end();
  await p.link.closed;
  await eventually(() => p.sessions[0].closed, 'the session closed');
  assert.ok(p.logs.some((line) => /host connection ended: the host disconnected/.test(line)), p.logs.join('\n'));
});
