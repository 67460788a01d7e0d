/**
 * The live agent sessions, one per running sandbox (sandboxId → AgentSession). Lifecycle use-cases open
 * a session after every restore and suspend it before every checkpoint or kill; exec/files calls borrow
 * it. When a channel drops on its own while the sandbox is still running, the registry reconnects (once
 * at once in the background, and again lazily on the next call).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RamifyError, type AgentEvent, type AgentSession } from '@ramify/contracts';
import type { ConnectAgentOpts } from '../ports/agent.js';
import type { Clock } from '../ports/clock.js';
import type { Logger } from '../ports/logger.js';
import type { SandboxEvents } from './events.js';

export interface AgentSessionsOptions {
  /**
   * Open a channel to the sandbox's agent and wrap it in a session; reject `AGENT_UNREACHABLE` when the
   * agent does not answer its first ping within `opts.pingTimeoutMs` (the overall bound is kept here).
   */
  connect: (sandboxId: string, opts: ConnectAgentOpts) => Promise<AgentSession>;
  /** Whether the sandbox is currently `running` (asked before reconnecting). */
  isRunning: (sandboxId: string) => Promise<boolean>;
  /**
   * Where a lost channel of a running sandbox that cannot be reopened is reported, as an `agentLost`
   * event (its instance may have died: the lifecycle subscribes and checks; `instance-lost.ts`).
   */
  events: Pick<SandboxEvents, 'emitAgentLost'>;
  /** Stamps the events' `at`. */
  clock: Clock;
  /** Called for every event an open session's agent pushes (an OOM kill). */
  onEvent?: (sandboxId: string, event: AgentEvent) => void;
  logger: Logger;
  /**
   * Bound on connect + first ping, ms. Within it, a channel whose first ping gets no answer is closed
   * and opened again (first ping bound `firstPingTimeoutMs`, doubling per attempt).
   */
  connectTimeoutMs: number;
  /** The first attempt's bound on the first ping, ms; default {@link FIRST_PING_TIMEOUT_MS}. */
  firstPingTimeoutMs?: number;
}

/** The first attempt's bound on the agent's first ping, ms; each reconnect doubles it (up to 16x). */
export const FIRST_PING_TIMEOUT_MS = 3000;
/** Pause between a failed attempt and the reconnect, ms. */
const RECONNECT_PAUSE_MS = 100;


export class AgentSessions {
  readonly #live = new Map<string, AgentSession>();
  readonly #opening = new Map<string, Promise<AgentSession>>();
  readonly #suspended = new Set<string>();
  readonly #closedByUs = new WeakSet<AgentSession>();
  readonly #closeWatchers = new WeakMap<AgentSession, Set<(reason: string) => void>>();
  /** Per sandbox: a promise that rejects when its runtime instance is seen to exit (see {@link abandon}). */
  readonly #deaths = new Map<string, { promise: Promise<never>; reject: (err: RamifyError) => void; exited: boolean }>();
  readonly #options: AgentSessionsOptions;

  constructor(options: AgentSessionsOptions) {
    this.#options = options;
  }

  /**
   * Open a fresh session (after a restore), replacing any previous one, and allow reconnects again.
   * `options.timeoutMs` replaces `connectTimeoutMs` for this open (a host busy bringing many sandboxes up).
   * @throws RamifyError `AGENT_UNREACHABLE` when the agent does not answer within the bound.
   */
  async open(sandboxId: string, options: { timeoutMs?: number } = {}): Promise<AgentSession> {
    this.#suspended.delete(sandboxId);
    this.#deaths.delete(sandboxId);
    await this.#closeCurrent(sandboxId);
    return this.#connect(sandboxId, options.timeoutMs);
  }

  /**
   * The live session of a running sandbox, reconnecting when its channel was lost.
   * @throws RamifyError `INVALID_STATE` while suspended (a checkpoint or kill is in progress),
   *   `AGENT_UNREACHABLE` when reconnecting fails.
   */
  async get(sandboxId: string): Promise<AgentSession> {
    if (this.#deaths.get(sandboxId)?.exited) throw instanceExited(sandboxId);
    if (this.#suspended.has(sandboxId)) {
      throw new RamifyError('INVALID_STATE', `sandbox '${sandboxId}' is being checkpointed or stopped; retry when it is running`, { id: sandboxId });
    }
    const live = this.#live.get(sandboxId);
    if (live && !live.closed) return live;
    return this.#opening.get(sandboxId) ?? this.#connect(sandboxId);
  }

  /** The live session if one is open right now, without reconnecting. */
  peek(sandboxId: string): AgentSession | undefined {
    const live = this.#live.get(sandboxId);
    return live && !live.closed ? live : undefined;
  }

  /**
   * Call `listener` once when `session`'s channel closes, for any reason (a pause closes it on purpose).
   * Streams use it to end their client connection so the client re-attaches later. Returns an unsubscribe.
   */
  whenClosed(session: AgentSession, listener: (reason: string) => void): () => void {
    if (session.closed) {
      queueMicrotask(() => listener('agent channel closed'));
      return () => undefined;
    }
    let watchers = this.#closeWatchers.get(session);
    if (!watchers) {
      const set = new Set<(reason: string) => void>();
      watchers = set;
      this.#closeWatchers.set(session, set);
      session.onClose((reason) => {
        for (const watcher of [...set]) watcher(reason);
        set.clear();
      });
    }
    watchers.add(listener);
    return () => watchers.delete(listener);
  }

  /** Close the session and refuse reconnects until {@link open} or {@link allowReconnect} (before a checkpoint or kill). */
  async suspend(sandboxId: string): Promise<void> {
    this.#suspended.add(sandboxId);
    await this.#opening.get(sandboxId)?.catch(() => undefined);
    await this.#closeCurrent(sandboxId);
  }

  /** Lift a suspension without opening (a refused checkpoint: the sandbox keeps running). */
  allowReconnect(sandboxId: string): void {
    this.#suspended.delete(sandboxId);
  }

  /**
   * The sandbox's runtime instance exited (the liveness monitor saw it): fail its pending opens and
   * later {@link get}s at once with `SANDBOX_FAILED` (no 20 s channel timeout) and close its channel,
   * which rejects calls in flight. Lifted by the next {@link open} (a restore).
   */
  async abandon(sandboxId: string): Promise<void> {
    const death = this.#death(sandboxId);
    death.exited = true;
    death.reject(instanceExited(sandboxId));
    await this.#closeCurrent(sandboxId);
  }

  #death(sandboxId: string): { promise: Promise<never>; reject: (err: RamifyError) => void; exited: boolean } {
    let death = this.#deaths.get(sandboxId);
    if (!death) {
      let reject!: (err: RamifyError) => void;
      const promise = new Promise<never>((_, r) => (reject = r));
      promise.catch(() => undefined);
      death = { promise, reject, exited: false };
      this.#deaths.set(sandboxId, death);
    }
    return death;
  }

  /** Close and forget everything about the sandbox (killed). */
  async drop(sandboxId: string): Promise<void> {
    await this.suspend(sandboxId);
    this.#suspended.delete(sandboxId);
    this.#deaths.delete(sandboxId);
  }

  /** Close every session (daemon shutdown); sandboxes keep running. */
  async closeAll(): Promise<void> {
    const ids = [...new Set([...this.#live.keys(), ...this.#opening.keys()])];
    await Promise.all(ids.map((id) => this.suspend(id)));
    this.#suspended.clear();
  }

  async #closeCurrent(sandboxId: string): Promise<void> {
    const current = this.#live.get(sandboxId);
    this.#live.delete(sandboxId);
    if (!current) return;
    this.#closedByUs.add(current);
    if (!current.closed) await current.close().catch(() => undefined);
  }

  #connect(sandboxId: string, timeoutMs?: number): Promise<AgentSession> {
    const pending = this.#open(sandboxId, timeoutMs ?? this.#options.connectTimeoutMs).finally(() => {
      if (this.#opening.get(sandboxId) === pending) this.#opening.delete(sandboxId);
    });
    this.#opening.set(sandboxId, pending);
    return pending;
  }

  async #open(sandboxId: string, connectTimeoutMs: number): Promise<AgentSession> {
    let gaveUp = false;
    let lastError: unknown;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        gaveUp = true;
        const why = lastError === undefined ? '' : ` (last attempt: ${lastError instanceof Error ? lastError.message : String(lastError)})`;
        reject(new RamifyError('AGENT_UNREACHABLE', `agent of sandbox '${sandboxId}' did not answer within ${connectTimeoutMs} ms${why}`, { id: sandboxId }));
      }, connectTimeoutMs);
    });
    const attempts = (async (): Promise<AgentSession> => {
      for (let attempt = 0; !gaveUp; attempt++) {
        const pingTimeoutMs = (this.#options.firstPingTimeoutMs ?? FIRST_PING_TIMEOUT_MS) * 2 ** Math.min(attempt, 4);
        try {
          // `connect` pings the agent within `pingTimeoutMs` before it resolves (the ConnectAgent contract,
          // ports/agent.ts): no second ping here, which would cost a round trip to a just-restored agent.
          return await this.#options.connect(sandboxId, { pingTimeoutMs }); // When the overall bound passed meanwhile, the caller closes it.
        } catch (err) {
          if (gaveUp || !(err instanceof RamifyError && err.code === 'AGENT_UNREACHABLE')) throw err;
          // A channel that opened but whose first ping got no answer: reconnect. (A restored microVM's
          // guest can lose the first request when it sees the previous host leave late.)
          lastError = err;
          this.#options.logger.info('agent did not answer; reconnecting', { sandboxId, attempt: attempt + 1, error: err.message });
          await sleep(RECONNECT_PAUSE_MS);
        }
      }
      throw lastError;
    })();
    let session: AgentSession;
    try {
      session = await Promise.race([attempts, timeout, this.#death(sandboxId).promise]);
    } catch (err) {
      // Timed out while an attempt was still connecting: close the session if it shows up later.
      gaveUp = true;
      void attempts.then((late) => late.close()).catch(() => undefined);
      if (err instanceof RamifyError && err.code === 'SANDBOX_FAILED') throw err;
      throw asAgentUnreachable(sandboxId, err);
    } finally {
      clearTimeout(timer);
    }
    const opened = session;
    if (this.#suspended.has(sandboxId)) {
      // A checkpoint or kill started while we were connecting: do not hand out a channel it must not see.
      this.#closedByUs.add(opened);
      await opened.close().catch(() => undefined);
      throw new RamifyError('INVALID_STATE', `sandbox '${sandboxId}' is being checkpointed or stopped; retry when it is running`, { id: sandboxId });
    }
    this.#live.set(sandboxId, opened);
    opened.onClose((reason) => this.#onLost(sandboxId, opened, reason));
    const onEvent = this.#options.onEvent;
    if (onEvent) opened.onEvent((event) => onEvent(sandboxId, event));
    return opened;
  }

  #onLost(sandboxId: string, session: AgentSession, reason: string): void {
    if (this.#closedByUs.has(session)) return;
    if (this.#live.get(sandboxId) === session) this.#live.delete(sandboxId);
    if (this.#suspended.has(sandboxId)) return;
    this.#options.logger.warn('agent channel lost; reconnecting', { sandboxId, reason });
    void (async () => {
      if (!(await this.#options.isRunning(sandboxId))) return;
      try {
        await this.get(sandboxId);
      } catch (err) {
        this.#options.logger.warn('agent reconnect failed; checking the instance', { sandboxId, error: String(err) });
        this.#options.events.emitAgentLost({ sandboxId, error: err instanceof Error ? err.message : String(err), at: this.#options.clock.now() });
      }
    })().catch((err: unknown) => this.#options.logger.warn('handling a lost agent channel failed', { sandboxId, error: String(err) }));
  }
}

function instanceExited(sandboxId: string): RamifyError {
  return new RamifyError('SANDBOX_FAILED', `sandbox '${sandboxId}' failed: its runtime instance exited`, { id: sandboxId, reason: 'its runtime instance exited' });
}

function asAgentUnreachable(sandboxId: string, err: unknown): RamifyError {
  if (err instanceof RamifyError && err.code === 'AGENT_UNREACHABLE') return err;
  const message = err instanceof Error ? err.message : String(err);
  return new RamifyError('AGENT_UNREACHABLE', `cannot reach the agent of sandbox '${sandboxId}': ${message}`, { id: sandboxId });
}
