/**
 * The live side of events: every event, once stored, is published here in the order it was stored;
 * live streams and the webhook dispatcher subscribe. A subscriber must not block (it is called in line):
 * streams send a frame, the dispatcher queues. A throwing subscriber is dropped from that call only.
 */
import type { EventRecord } from '../ports/event-store.js';

export class EventHub {
  readonly #subscribers = new Set<(event: EventRecord) => void>();

  /** Call `subscriber` with every event published from now on; returns the unsubscribe function. */
  subscribe(subscriber: (event: EventRecord) => void): () => void {
    this.#subscribers.add(subscriber);
    return () => this.#subscribers.delete(subscriber);
  }

  publish(event: EventRecord): void {
    for (const subscriber of this.#subscribers) {
      try {
        subscriber(event);
      } catch {
        /* a subscriber's failure is its own */
      }
    }
  }

  /** Subscribers now (diagnostics). */
  get size(): number {
    return this.#subscribers.size;
  }
}
