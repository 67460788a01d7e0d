/**
 * The live hub's source. One process over its own store (SQLite): the events it stores are all there are,
 * so {@link LocalEventFeed} forwards the recorder's stored events to the hub as they are stored. Several
 * processes over one store (Postgres): events happen on whichever process made them, so
 * {@link SharedEventFeed} publishes **every** process's events, its own included, read back from the
 * store: woken by the store's notifications (`LISTEN/NOTIFY`) and by a slow poll in case one was lost,
 * it reads each team's counter (`eventPositions`) and, for each team whose counter moved past what it has
 * published, that team's events after it, in team order (a team's appends commit in number order, so
 * reading after the last number never skips one that commits late). Each event is published once per
 * process. docs/design/SCALE-OUT.md.
 */
import type { EventNotifications, EventRecord } from '../ports/event-store.js';
import type { Logger } from '../ports/logger.js';
import type { Store } from '../ports/store.js';
import type { EventHub } from './hub.js';

/** Where the live hub's events come from; started once the process is ready, closed before the store. */
export interface EventFeed {
  /** Begin publishing (the shared feed reads the positions it publishes after). Never rejects. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** Forwards `stored` (this process's stored events) to `hub`, from construction on. */
export class LocalEventFeed implements EventFeed {
  readonly #off: () => void;

  constructor(stored: EventHub, hub: EventHub) {
    this.#off = stored.subscribe((event) => hub.publish(event));
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.#off();
  }
}

export interface SharedEventFeedOptions {
  store: Pick<Store, 'eventPositions' | 'listEvents'>;
  notifications: EventNotifications;
  hub: EventHub;
  logger: Logger;
  /** The fallback poll's period, ms. Default 2000. */
  pollMs?: number;
}

/** Events read per team and query. */
const PAGE = 500;

export class SharedEventFeed implements EventFeed {
  readonly #o: SharedEventFeedOptions;
  /** Per team: the last team number published. */
  readonly #published = new Map<string, number>();
  #reading: Promise<void> | null = null;
  #again = false;
  #stopListening: (() => Promise<void>) | null = null;
  #poll: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(options: SharedEventFeedOptions) {
    this.#o = options;
  }

  async start(): Promise<void> {
    try {
      for (const p of await this.#o.store.eventPositions()) this.#published.set(p.teamId, p.lastTeamSeq);
    } catch (err) {
      this.#o.logger.error('event feed: reading the event positions failed; publishing from the first event read', { error: messageOf(err) });
    }
    if (this.#closed) return;
    this.#stopListening = await this.#o.notifications.listen(
      () => this.#wake(),
      (err) => this.#o.logger.warn('event feed: the listening connection failed; reconnecting (the poll covers meanwhile)', { error: err.message }),
    );
    this.#poll = setInterval(() => this.#wake(), this.#o.pollMs ?? 2_000);
    this.#poll.unref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#poll) clearInterval(this.#poll);
    await this.#stopListening?.();
    await this.#reading;
  }

  /** Read and publish what is new; a wake while reading runs one more read after it. */
  #wake(): void {
    if (this.#closed) return;
    if (this.#reading) {
      this.#again = true;
      return;
    }
    this.#reading = (async () => {
      do {
        this.#again = false;
        await this.#catchUp().catch((err: unknown) => this.#o.logger.warn('event feed: reading new events failed; trying again at the next wake', { error: messageOf(err) }));
      } while (this.#again && !this.#closed);
      this.#reading = null;
    })();
  }

  async #catchUp(): Promise<void> {
    for (const { teamId, lastTeamSeq } of await this.#o.store.eventPositions()) {
      let after = this.#published.get(teamId) ?? 0;
      while (after < lastTeamSeq && !this.#closed) {
        const page: EventRecord[] = await this.#o.store.listEvents({ teamId, order: 'asc', afterTeamSeq: after, limit: PAGE });
        for (const event of page) {
          after = event.teamSeq;
          this.#published.set(teamId, after);
          this.#o.hub.publish(event);
        }
        if (page.length < PAGE) {
          // The counter commits with its event, so what is missing up to it was pruned: never read it again.
          this.#published.set(teamId, Math.max(after, lastTeamSeq));
          break;
        }
      }
    }
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
