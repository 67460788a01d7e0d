/**
 * AgentSessions.open: the bound on connect + first ping, and the reconnect when an opened channel's
 * first ping gets no answer (a restored microVM's guest can lose it). Sessions here are minimal
 * stand-ins: only ping/close/onClose are used by the registry while opening.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RamifyError, type AgentSession } from '@ramify/contracts';
import { systemClock } from '../ports/clock.js';
import { silentLogger } from '../ports/logger.js';
import { AgentSessions } from './agent-sessions.js';
import { SandboxEvents, type SandboxAgentLostEvent } from './events.js';

/** A session whose ping answers (`'answers'`), never answers (`'silent'`). */
function stubSession(ping: 'answers' | 'silent'): { session: AgentSession; closedCount: () => number } {
  let closes = 0;
  let closed = false;
  const listeners: ((reason: string) => void)[] = [];
  const session = {
    ping: () => (ping === 'answers' ? Promise.resolve() : new Promise<void>(() => undefined)),
    close: async () => {
      closes++;
      if (!closed) {
        closed = true;
        for (const l of listeners) l('closed');
      }
    },
    onClose: (l: (reason: string) => void) => listeners.push(l),
    get closed() {
      return closed;
    },
  };
  return { session: session as unknown as AgentSession, closedCount: () => closes };
}

/**
 * A registry over `channel` (the stub's session for each attempt), connected as the ConnectAgent contract
 * says (ports/agent.ts; `@ramify/agent`'s connectAgent does it): ping once within `pingTimeoutMs`, else
 * close the session and reject AGENT_UNREACHABLE.
 */
function registry(channel: (id: string, opts: { pingTimeoutMs?: number }) => Promise<AgentSession>, connectTimeoutMs = 2000, events = new SandboxEvents()): AgentSessions {
  const connect = async (id: string, opts: { pingTimeoutMs?: number }): Promise<AgentSession> => {
    const session = await channel(id, opts);
    const bound = opts.pingTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([session.ping(), new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new RamifyError('AGENT_UNREACHABLE', `agent did not answer a ping within ${bound} ms`)), bound)))]);
      return session;
    } catch (err) {
      await session.close();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  };
  return new AgentSessions({ connect, isRunning: async () => true, logger: silentLogger, connectTimeoutMs, firstPingTimeoutMs: 50, events, clock: systemClock });
}

describe('AgentSessions.open', () => {
  test('a channel whose first ping gets no answer is closed and opened again, with a doubled ping bound', async () => {
    const silent = stubSession('silent');
    const answering = stubSession('answers');
    const bounds: (number | undefined)[] = [];
    const sessions = registry(async (_id, opts) => {
      bounds.push(opts.pingTimeoutMs);
      return bounds.length === 1 ? silent.session : answering.session;
    });
    const opened = await sessions.open('sbx_a');
    assert.equal(opened, answering.session);
    assert.deepEqual(bounds, [50, 100]);
    assert.equal(silent.closedCount(), 1, 'the silent channel was closed before the reconnect');
    assert.equal(sessions.peek('sbx_a'), answering.session);
  });

  test('a connect that resolved is used as it is: the registry sends no second ping', async () => {
    let pings = 0;
    const session = { ...stubSession('answers').session, ping: async () => void pings++ } as unknown as AgentSession;
    const sessions = new AgentSessions({ connect: async () => session, isRunning: async () => true, logger: silentLogger, connectTimeoutMs: 2000, events: new SandboxEvents(), clock: systemClock });
    assert.equal(await sessions.open('sbx_p'), session);
    assert.equal(pings, 0);
  });

  test('a connect that rejects AGENT_UNREACHABLE (its own ping timed out) is retried too', async () => {
    const answering = stubSession('answers');
    let calls = 0;
    const sessions = registry(async () => {
      calls++;
      if (calls === 1) throw new RamifyError('AGENT_UNREACHABLE', 'agent did not answer a ping within 50 ms');
      return answering.session;
    });
    assert.equal(await sessions.open('sbx_b'), answering.session);
    assert.equal(calls, 2);
  });

  test('nothing answering ends in AGENT_UNREACHABLE naming the bound and the last attempt', async () => {
    const stubs: ReturnType<typeof stubSession>[] = [];
    const sessions = registry(async () => {
      const s = stubSession('silent');
      stubs.push(s);
      return s.session;
    }, 400);
    await assert.rejects(sessions.open('sbx_c'), (err: unknown) => {
      assert.ok(err instanceof RamifyError);
      assert.equal(err.code, 'AGENT_UNREACHABLE');
      assert.match(err.message, /did not answer within 400 ms \(last attempt: agent did not answer a ping within \d+ ms\)/);
      return true;
    });
    assert.ok(stubs.length >= 2, `reconnected (${stubs.length} attempts)`);
    // The attempt in flight at the deadline closes when its own ping bound ends: wait for that, with a generous limit.
    for (let i = 0; i < 300 && !stubs.every((s) => s.closedCount() >= 1); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(stubs.every((s) => s.closedCount() >= 1), 'every attempt, the one in flight at the deadline too, is closed');
    assert.equal(sessions.peek('sbx_c'), undefined);
  });

  test('other errors are not retried', async () => {
    let calls = 0;
    const sessions = registry(async (id) => {
      calls++;
      throw new RamifyError('SANDBOX_NOT_FOUND', `sandbox '${id}' not found`);
    });
    await assert.rejects(sessions.open('sbx_d'), (err: unknown) => err instanceof RamifyError && err.code === 'AGENT_UNREACHABLE' && /not found/.test(err.message));
    assert.equal(calls, 1);
  });
});

describe('AgentSessions: a channel lost for good', () => {
  test('a channel that drops on its own and cannot be reopened is reported once as agentLost on the bus', async () => {
    const first = stubSession('answers');
    let attempts = 0;
    const events = new SandboxEvents();
    const lost: SandboxAgentLostEvent[] = [];
    events.onAgentLost((e) => lost.push(e));
    const sessions = registry(async () => {
      attempts++;
      if (attempts === 1) return first.session;
      throw new RamifyError('AGENT_UNREACHABLE', 'connection refused');
    }, 300, events);
    await sessions.open('sbx-1');
    const before = Date.now();
    await first.session.close(); // from outside the registry: the instance went away
    for (let i = 0; i < 100 && lost.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(lost.length, 1);
    assert.equal(lost[0]!.sandboxId, 'sbx-1');
    assert.match(lost[0]!.error, /did not answer within 300 ms/);
    assert.ok(lost[0]!.at >= before);
    assert.ok(attempts > 1, 'it tried to reconnect first');
  });

  test('a channel the registry closes itself (suspend before a checkpoint) is not reported', async () => {
    const only = stubSession('answers');
    const events = new SandboxEvents();
    let reports = 0;
    events.onAgentLost(() => reports++);
    const sessions = registry(async () => only.session, 300, events);
    await sessions.open('sbx-2');
    await sessions.suspend('sbx-2');
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(reports, 0);
  });
});
