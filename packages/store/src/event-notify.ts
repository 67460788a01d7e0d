/**
 * Hearing other processes' event appends on Postgres (core's `EventNotifications`; docs/design/SCALE-OUT.md):
 * each append's transaction runs `pg_notify('ramify_events', team id)`, which Postgres delivers to every
 * listener when it commits. A listener holds one dedicated connection (`LISTEN` needs a session of its own:
 * a pooled connection goes back to the pool), outside the store's pool. When that connection fails it is
 * reported, and opened again after a backoff (1 s doubling to 30 s), also when the first attempt fails
 * (`listen` resolves either way); `onAppend` is called once after each connection, since appends made
 * while it was down were not heard.
 */
import type { EventNotifications } from '@ramify/core';
import pg from 'pg';

/** The channel appends notify (the payload is the team id). */
export const EVENTS_CHANNEL = 'ramify_events';

const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;

export class PgEventNotifications implements EventNotifications {
  readonly #connect: () => pg.Client;

  /** `connect` makes an unconnected client to the store's database (its URL, timeouts and type parsers). */
  constructor(connect: () => pg.Client) {
    this.#connect = connect;
  }

  async listen(onAppend: () => void, onError: (err: Error) => void): Promise<() => Promise<void>> {
    let stopped = false;
    let client: pg.Client | null = null;
    let retryMs = RETRY_FIRST_MS;
    let timer: NodeJS.Timeout | null = null;
    const open = async (): Promise<void> => {
      const c = this.#connect();
      let failed = false;
      const fail = (err: Error): void => {
        if (failed) return;
        failed = true;
        if (client === c) client = null;
        void c.end().catch(() => undefined);
        if (stopped) return;
        onError(err);
        timer = setTimeout(() => void open(), retryMs);
        timer.unref();
        retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
      };
      c.on('error', fail);
      c.on('end', () => fail(new Error('the listening connection to Postgres closed')));
      c.on('notification', (n) => {
        if (n.channel === EVENTS_CHANNEL) onAppend();
      });
      try {
        await c.connect();
        await c.query(`LISTEN ${EVENTS_CHANNEL}`);
      } catch (err) {
        fail(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      if (stopped) {
        await c.end().catch(() => undefined);
        return;
      }
      client = c;
      retryMs = RETRY_FIRST_MS;
      onAppend();
    };
    await open();
    return async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = null;
      await c?.end().catch(() => undefined);
    };
  }
}
