/**
 * Events the agent reports unasked (`event` frames; today OOM kills). Each goes to every open
 * connection; while none is open it is queued (the newest {@link MAX_QUEUED_EVENTS}) and delivered to the
 * next one. A queue still held at a checkpoint travels in the image: every restore of it delivers it,
 * and each event names the sandbox it happened in, so a host keeps only its own sandbox's (see
 * `OomKillEvent.sandboxId`); a new identity drops the others from the queue.
 */
import type { AgentEvent } from '@ramify/contracts';
import type { AgentConnection } from './connection.js';

/** At most this many undelivered events are kept; older ones are dropped first. */
export const MAX_QUEUED_EVENTS = 64;

export class AgentEvents {
  readonly #connections = new Set<AgentConnection>();
  #queue: AgentEvent[] = [];

  /** Deliver to `conn` from now on, starting with what is queued. */
  attach(conn: AgentConnection): void {
    if (conn.isClosed) return;
    this.#connections.add(conn);
    conn.onClosed(() => this.#connections.delete(conn));
    for (const event of this.#queue.splice(0)) conn.send({ t: 'event', event });
  }

  /** Send `event` to every open connection, or queue it when there is none. */
  emit(event: AgentEvent): void {
    const open = [...this.#connections].filter((c) => !c.isClosed);
    if (open.length === 0) {
      this.#queue.push(event);
      if (this.#queue.length > MAX_QUEUED_EVENTS) this.#queue.shift();
      return;
    }
    for (const conn of open) conn.send({ t: 'event', event });
  }

  /** Drop queued events of any sandbox but `sandboxId` (the agent now serves it: they were a parent's). */
  keepOnly(sandboxId: string): void {
    this.#queue = this.#queue.filter((e) => e.sandboxId === sandboxId);
  }

  /** Undelivered events (tests). */
  get queued(): readonly AgentEvent[] {
    return this.#queue;
  }
}
