/** Events reach every open connection, wait for one when none is open, and a new identity drops other sandboxes' queued events. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Duplex } from 'node:stream';
import type { OomKillEvent } from '@ramify/contracts';
import { FrameDecoder } from '../protocol/framing.js';
import { AgentEvents, MAX_QUEUED_EVENTS } from './agent-events.js';
import { AgentConnection } from './connection.js';

const oom = (sandboxId: string, pid: number): OomKillEvent => ({ type: 'oom', sandboxId, at: 0, pid, cmd: 'x', commandPid: null, killer: 'agent', rssBytes: 1, usedBytes: 2, limitBytes: 3 });

/** A connection over an in-memory stream, and the messages it sent. */
function connection(): { conn: AgentConnection; sent: unknown[]; close: () => void } {
  const decoder = new FrameDecoder();
  const sent: unknown[] = [];
  const socket = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      sent.push(...decoder.push(chunk));
      callback();
    },
  });
  const conn = new AgentConnection(socket, async () => ({}), () => undefined);
  return { conn, sent, close: () => socket.destroy() };
}

test('an event goes to every open connection; without one it waits for the next', async () => {
  const events = new AgentEvents();
  events.emit(oom('sbx_a', 1));
  assert.equal(events.queued.length, 1);
  const a = connection();
  events.attach(a.conn);
  assert.deepEqual(a.sent, [{ t: 'event', event: oom('sbx_a', 1) }]);
  const b = connection();
  events.attach(b.conn);
  events.emit(oom('sbx_a', 2));
  assert.deepEqual([a.sent.length, b.sent.length], [2, 1]);
  a.close();
  b.close();
  await new Promise((r) => setImmediate(r));
  events.emit(oom('sbx_a', 3));
  assert.equal(events.queued.length, 1, 'both closed: queued again');
});

test('the queue keeps the newest events, and a new identity drops the other sandboxes\'', () => {
  const events = new AgentEvents();
  for (let pid = 0; pid < MAX_QUEUED_EVENTS + 5; pid++) events.emit(oom(pid % 2 ? 'sbx_parent' : 'sbx_fork', pid));
  assert.equal(events.queued.length, MAX_QUEUED_EVENTS);
  assert.equal(events.queued[0]?.pid, 5);
  events.keepOnly('sbx_fork');
  assert.ok(events.queued.length > 0 && events.queued.every((e) => e.sandboxId === 'sbx_fork'));
});
