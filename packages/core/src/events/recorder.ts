/**
 * The event recorder: subscribes to every kind on the bus (`core.events.onAny`), turns each into a stored
 * event with {@link EVENTS_FROM_BUS} (synchronously, in the emitter's call context: so it knows the API
 * key and the cause), writes them to the store one at a time in emit order, and publishes each stored
 * event on {@link EventRecorder.stored}: the events this process stored, in order (the webhook dispatcher
 * and the metrics take them from there; core.ts forwards them to the live hub when no other process
 * shares the store, else the cross-process feed publishes every process's events there). A write is queued in the emitter's call (SQLite writes it before that call's
 * answer is sent); readers call {@link EventRecorder.flush} first. A failed write is logged and the event
 * is lost (the operation it describes is not undone).
 */
import { currentCallContext } from '../observe/call-context.js';
import type { Logger } from '../ports/logger.js';
import type { Store } from '../ports/store.js';
import type { SandboxEvents } from '../lifecycle/events.js';
import { EVENTS_FROM_BUS, type NewEvent } from './from-bus.js';
import { EventHub } from './hub.js';

export interface EventRecorderOptions {
  events: SandboxEvents;
  store: Pick<Store, 'appendEvent' | 'getSandbox'>;
  logger: Logger;
  /** `record` (default); `off`: listen to nothing, store nothing. */
  mode?: 'record' | 'off';
}

export class EventRecorder {
  /** Each event this process stored, once stored, in the order stored. */
  readonly stored = new EventHub();
  readonly #options: EventRecorderOptions;
  /** The last write queued; never rejects. */
  #tail: Promise<void> = Promise.resolve();
  #off: (() => void) | null;
  #recorded = 0;
  #pending = 0;

  constructor(options: EventRecorderOptions) {
    this.#options = options;
    this.#off = options.mode === 'off' ? null : options.events.onAny(({ kind, event }) => {
      const mapping = EVENTS_FROM_BUS[kind] as (e: typeof event, c: ReturnType<typeof currentCallContext>) => NewEvent | null;
      const stored = mapping(event, currentCallContext());
      if (stored) this.#queue(stored);
    });
  }

  /** Resolves once every event emitted so far is stored (or lost to a failed write). Never rejects. */
  flush(): Promise<void> {
    return this.#tail;
  }

  /** Stop listening, then flush. */
  async close(): Promise<void> {
    this.#off?.();
    this.#off = null;
    await this.#tail;
  }

  /** Events stored, and waiting to be. */
  stats(): { recorded: number; pending: number } {
    return { recorded: this.#recorded, pending: this.#pending };
  }

  #queue(event: NewEvent): void {
    this.#pending += 1;
    this.#tail = this.#tail.then(() => this.#write(event));
  }

  async #write(event: NewEvent): Promise<void> {
    const { store, logger } = this.#options;
    try {
      const teamId = event.teamId ?? (event.sandboxId === null ? null : (await store.getSandbox(event.sandboxId))?.teamId ?? null);
      if (teamId === null) return;
      const record = await store.appendEvent({ ...event, teamId });
      this.#recorded += 1;
      this.stored.publish(record);
    } catch (err) {
      logger.error('event recorder: storing an event failed; it is lost', { type: event.type, sandboxId: event.sandboxId, error: err instanceof Error ? err.message : String(err) });
    } finally {
      this.#pending -= 1;
    }
  }
}
