/**
 * The webhook dispatcher: delivers each stored event to the webhooks of its team that take its type,
 * off the path of the call that caused it. Per delivery: a row in the store (`pending`), then attempts,
 * each a signed JSON POST bounded by `timeoutMs`, retried with exponential backoff (`retryBaseMs` × 2^n,
 * ±20 % jitter, at most `retryMaxMs`) until a 2xx (`delivered`) or `maxAttempts` (`failed`; at once for a destination the policy refuses,
 * `destination.ts`); every
 * attempt is logged on its delivery. A slow or dead receiver cannot slow the daemon: events reach the
 * dispatcher through the hub and are matched on a later turn of the event loop, at most `concurrency`
 * POSTs are in flight (`perWebhookConcurrency` per webhook, so one hung receiver holds only its own
 * slots), and at most `maxQueue` deliveries wait (more are recorded `failed`, "queue full").
 * Deliveries wait for a quiet daemon: events are matched (and so POSTed) once this process's foreground
 * work (lifecycle calls, foreground commands: `lifecycle/foreground.ts`) has been quiet for `quietMs`, or
 * the oldest has waited `maxDeferMs`, so a delivery does not slow the caller's next call. Retries keep
 * their own backoff.
 * Several processes over one store (docs/design/SCALE-OUT.md): each process matches only the events it
 * stored itself (its recorder's `stored` hub), the store keeps one delivery per (webhook, event), and a
 * process attempts a delivery only while it holds the delivery's **claim** (a lease in the store, renewed
 * before each attempt and kept until its next retry is due). Pending deliveries whose claim ran out (a
 * process died, or this one restarted) are claimed by whichever process sweeps next
 * ({@link WebhookDispatcher.start}, then every `claimSweepMs`), so each is attempted by one process at a time.
 */
import { WEBHOOK_DELIVERY_HEADER, WEBHOOK_EVENT_HEADER, WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER, type WebhookPayload } from '@ramify/contracts';
import { toSandboxEvent } from '../events/list.js';
import type { EventHub } from '../events/hub.js';
import { newDeliveryId } from '../ids.js';
import type { Clock } from '../ports/clock.js';
import type { DeliveryRecord, EventRecord, WebhookRecord } from '../ports/event-store.js';
import type { Logger } from '../ports/logger.js';
import type { Store } from '../ports/store.js';
import type { WebhookSender } from '../ports/webhook-sender.js';
import { WebhookDestinationRefused } from './destination.js';
import { signWebhookBody } from './signing.js';

/** Tunables; every field has a default ({@link DEFAULT_WEBHOOK_TUNABLES}). */
export interface WebhookTunables {
  /** Bound of one attempt, until the receiver's status line, ms. */
  timeoutMs: number;
  /** Attempts per delivery, the first included. */
  maxAttempts: number;
  /** Wait before the second attempt, ms; doubled for each next one. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** POSTs in flight at once, all webhooks together. */
  concurrency: number;
  perWebhookConcurrency: number;
  /** Deliveries waiting (queued, scheduled for a retry, or in flight) at most. */
  maxQueue: number;
  /** How long a claim on a delivery outlives the attempt or the retry wait it covers, ms. */
  claimLeaseMs: number;
  /** How often pending deliveries whose claim ran out are claimed, ms. */
  claimSweepMs: number;
  /** New events are matched once the foreground has been quiet this long, ms ({@link WebhookDispatcherOptions.foregroundQuietForMs}). */
  quietMs: number;
  /** ... or once the oldest of them has waited this long, ms, however busy the foreground is. */
  maxDeferMs: number;
  /**
   * Allow loopback, private, link-local and this host's own addresses as destinations (`ramify serve
   * --webhook-allow-private`); default false: public addresses only (`destination.ts`). Read at create
   * (a literal IP host) and by the daemon's sender (every address it connects to).
   */
  allowPrivateDestinations: boolean;
}

/**
 * 10 s per attempt, 6 attempts over ~31 s of backoff (1, 2, 4, 8, 16 s), 8 in flight (2 per webhook), 10000
 * waiting, public destinations only; a dead process's deliveries are taken over 30 s after they were due,
 * looked for every 5 s; a first attempt waits for 250 ms of foreground quiet (the warm pool's refill
 * threshold), at most 2 s.
 */
export const DEFAULT_WEBHOOK_TUNABLES: WebhookTunables = {
  timeoutMs: 10_000, maxAttempts: 6, retryBaseMs: 1_000, retryMaxMs: 300_000, concurrency: 8, perWebhookConcurrency: 2, maxQueue: 10_000,
  claimLeaseMs: 30_000, claimSweepMs: 5_000, quietMs: 250, maxDeferMs: 2_000, allowPrivateDestinations: false,
};

export interface WebhookDispatcherOptions {
  store: Store;
  /** The events this process stored (the recorder's `stored` hub). */
  hub: EventHub;
  /** This process's name on its claims (its host id). */
  holder: string;
  sender: WebhookSender;
  logger: Logger;
  clock: Clock;
  tunables?: Partial<WebhookTunables>;
  /**
   * Time the process's foreground has been quiet, ms (0 while busy): `ForegroundWork.quietForMs`. Without
   * it, events are matched on the next turn of the event loop.
   */
  foregroundQuietForMs?: () => number;
}

/** One delivery the dispatcher holds. */
interface Job {
  delivery: DeliveryRecord;
  event: EventRecord;
  /**
   * Until when this process's claim surely holds (performance.now ms: counted from before the statement
   * that took it, so never later than the store's expiry). An attempt that ends before it (plus
   * {@link CLAIM_MARGIN_MS}) needs no renewal first: no other process can have claimed the delivery.
   */
  claimedUntilMs: number;
}

/** Slack between this process's clock and the store's for a claim's end, ms. */
const CLAIM_MARGIN_MS = 1_000;

export class WebhookDispatcher {
  readonly #o: WebhookDispatcherOptions;
  readonly #t: WebhookTunables;
  /** Per team: its webhooks (the whole table is small; refreshed on every change). */
  #webhooks = new Map<string, WebhookRecord[]>();
  /** Loads of the webhooks begun, and the latest one applied. */
  #loads = 0;
  #applied = 0;
  /** Bumped by each {@link refresh}: a load begun before it keeps the refreshed team's list. */
  #refreshes = 0;
  readonly #refreshedAt = new Map<string, number>();
  /** Ids of the deliveries held here (queued, scheduled or in flight): a sweep skips them. */
  readonly #held = new Set<string>();
  #sweep: NodeJS.Timeout | null = null;
  /** Events not yet matched to webhooks. */
  #incoming: EventRecord[] = [];
  /** When the oldest of {@link #incoming} arrived (performance.now ms). */
  #incomingSinceMs = 0;
  #matching = false;
  /** The wait for a quiet foreground before the next match. */
  #deferTimer: NodeJS.Timeout | null = null;
  readonly #ready: Job[] = [];
  readonly #retryTimers = new Map<NodeJS.Timeout, Job>();
  readonly #inFlight = new Map<string, number>();
  #inFlightTotal = 0;
  readonly #attempts = new Set<Promise<void>>();
  #off: (() => void) | null;
  #closed = false;
  /** Aborts the attempts in flight when the dispatcher closes. */
  readonly #stopping = new AbortController();

  constructor(options: WebhookDispatcherOptions) {
    this.#o = options;
    this.#t = { ...DEFAULT_WEBHOOK_TUNABLES, ...options.tunables };
    this.#off = options.hub.subscribe((event) => this.#accept(event));
  }

  /**
   * Load the webhooks and claim the pending deliveries that are due and unclaimed (those this process left
   * at its last run are its own again at once), then keep claiming every `claimSweepMs`. Never rejects.
   */
  async start(): Promise<void> {
    await this.#claimDue();
    if (this.#closed || this.#sweep) return;
    this.#sweep = setInterval(() => void this.#claimDue(), this.#t.claimSweepMs);
    this.#sweep.unref();
  }

  /** A team's webhooks changed (create, delete): `webhooks` is its list now. */
  refresh(teamId: string, webhooks: WebhookRecord[]): void {
    this.#webhooks.set(teamId, webhooks);
    this.#refreshedAt.set(teamId, ++this.#refreshes);
  }

  /** Deliveries waiting: to be matched, queued, scheduled for a retry, or in flight (the metrics gauge). */
  queueSize(): number {
    return this.#incoming.length + this.#ready.length + this.#retryTimers.size + this.#inFlightTotal;
  }

  /** Stop taking events and retrying; attempts in flight are abandoned (they stay pending: the next start retries them). */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#sweep) clearInterval(this.#sweep);
    if (this.#deferTimer) clearTimeout(this.#deferTimer);
    this.#stopping.abort();
    this.#off?.();
    this.#off = null;
    for (const timer of this.#retryTimers.keys()) clearTimeout(timer);
    this.#retryTimers.clear();
    this.#ready.length = 0;
    this.#held.clear();
    await Promise.allSettled([...this.#attempts]);
  }

  #accept(event: EventRecord): void {
    if (this.#closed) return;
    // Matching keeps up unless the store stalls; ten queues' worth of unmatched events is the bound.
    if (this.#incoming.length >= this.#t.maxQueue * 10) {
      this.#o.logger.warn('webhooks: too many events waiting to be matched; one is not delivered', { eventType: event.type, waiting: this.#incoming.length });
      return;
    }
    if (this.#incoming.length === 0) this.#incomingSinceMs = performance.now();
    this.#incoming.push(event);
    this.#matchSoon();
  }

  /**
   * Match on a later turn of the event loop (never in the call that stored the event), once the foreground
   * is quiet ({@link #deferMs}).
   */
  #matchSoon(): void {
    if (this.#matching || this.#closed) return;
    this.#matching = true;
    const waitMs = this.#deferMs();
    if (waitMs <= 0) {
      setImmediate(() => void this.#match());
      return;
    }
    this.#deferTimer = setTimeout(() => {
      this.#deferTimer = null;
      this.#matching = false;
      this.#matchSoon();
    }, waitMs);
    this.#deferTimer.unref();
  }

  /** How long the incoming events wait still, ms: until `quietMs` of foreground quiet, at most until the oldest waited `maxDeferMs`. */
  #deferMs(): number {
    const quietForMs = this.#o.foregroundQuietForMs?.();
    if (quietForMs === undefined || quietForMs >= this.#t.quietMs) return 0;
    const leftMs = this.#t.maxDeferMs - (performance.now() - this.#incomingSinceMs);
    return leftMs <= 0 ? 0 : Math.max(1, Math.min(this.#t.quietMs - quietForMs, leftMs));
  }

  /**
   * Match the incoming events to webhooks and record a pending delivery for each pair. A failure (the
   * store gone) drops the batch with a log line: it is never retried in a loop.
   */
  async #match(): Promise<void> {
    const batch = this.#incoming.splice(0);
    try {
      // Another process may have made or deleted a webhook: the store's list, once per batch.
      await this.#reload();
      for (const event of batch) {
        if (this.#closed) return;
        for (const webhook of this.#webhooks.get(event.teamId) ?? []) {
          if (webhook.events.includes(event.type)) await this.#newDelivery(webhook, event);
        }
      }
    } catch (err) {
      this.#o.logger.error('webhooks: matching events to webhooks failed; they are not delivered', { events: batch.length, error: messageOf(err) });
    } finally {
      this.#matching = false;
      if (this.#incoming.length > 0 && !this.#closed) this.#matchSoon();
    }
  }

  async #newDelivery(webhook: WebhookRecord, event: EventRecord): Promise<void> {
    const now = this.#o.clock.now();
    const full = this.queueSize() - this.#incoming.length >= this.#t.maxQueue;
    const delivery: DeliveryRecord = {
      id: newDeliveryId(), webhookId: webhook.id, eventSeq: event.seq, eventTeamSeq: event.teamSeq, eventType: event.type, createdAt: now,
      status: full ? 'failed' : 'pending', nextAttemptAt: full ? null : now,
      attempts: full ? [{ at: now, statusCode: null, error: `delivery queue full (${this.#t.maxQueue} waiting): not sent`, durationMs: 0 }] : [],
    };
    if (!full) this.#held.add(delivery.id);
    const claim = this.#claim(0);
    let claimedUntilMs = performance.now() + claim.leaseMs;
    const made = await this.#o.store.insertDelivery(delivery, full ? undefined : claim).catch((err: unknown) => {
      this.#o.logger.warn('webhooks: recording a delivery failed', { webhookId: webhook.id, error: messageOf(err) });
      claimedUntilMs = 0; // Not recorded: the attempt asks the store first.
      return true; // Attempted all the same, as before the store knew claims.
    });
    if (full) this.#o.logger.warn('webhooks: delivery queue full; an event was not delivered', { webhookId: webhook.id, eventType: event.type });
    else if (!made) this.#held.delete(delivery.id); // Another process recorded this event's delivery: it is its.
    else this.#schedule({ delivery, event, claimedUntilMs }, now);
  }

  /** Claim what is due and unclaimed, up to the room left in the queue, and queue it. Never rejects. */
  async #claimDue(): Promise<void> {
    const room = this.#t.maxQueue - this.queueSize();
    if (this.#closed || room <= 0) return;
    try {
      await this.#reload();
      const claim = this.#claim(0);
      const claimedUntilMs = performance.now() + claim.leaseMs;
      for (const delivery of await this.#o.store.claimDeliveries(claim, room)) {
        if (this.#held.has(delivery.id) || this.#closed) continue;
        const webhook = this.#webhookById(delivery.webhookId);
        const event = webhook ? await this.#o.store.getEvent(delivery.eventSeq) : null;
        if (!event || event.teamId !== webhook?.teamId) continue; // Pruned or deleted: its row goes with it.
        this.#held.add(delivery.id);
        this.#schedule({ delivery, event, claimedUntilMs }, delivery.nextAttemptAt ?? this.#o.clock.now());
      }
    } catch (err) {
      this.#o.logger.error('webhooks: claiming pending deliveries failed', { error: messageOf(err) });
    }
  }

  /** This process's claim, for `waitMs` (a retry's wait) plus the lease. */
  #claim(waitMs: number): { holder: string; leaseMs: number } {
    return { holder: this.#o.holder, leaseMs: waitMs + this.#t.claimLeaseMs };
  }

  #schedule(job: Job, at: number): void {
    const delayMs = Math.max(0, at - this.#o.clock.now());
    if (delayMs === 0) {
      this.#ready.push(job);
      this.#pump();
      return;
    }
    const timer = setTimeout(() => {
      this.#retryTimers.delete(timer);
      this.#ready.push(job);
      this.#pump();
    }, delayMs);
    timer.unref();
    this.#retryTimers.set(timer, job);
  }

  /** Start attempts while there is room, skipping (for now) the webhooks at their own bound. */
  #pump(): void {
    for (let i = 0; i < this.#ready.length && this.#inFlightTotal < this.#t.concurrency && !this.#closed;) {
      const job = this.#ready[i] as Job;
      const busy = this.#inFlight.get(job.delivery.webhookId) ?? 0;
      if (busy >= this.#t.perWebhookConcurrency) {
        i += 1;
        continue;
      }
      this.#ready.splice(i, 1);
      this.#inFlight.set(job.delivery.webhookId, busy + 1);
      this.#inFlightTotal += 1;
      const attempt = this.#attempt(job).finally(() => {
        this.#attempts.delete(attempt);
        this.#inFlight.set(job.delivery.webhookId, (this.#inFlight.get(job.delivery.webhookId) ?? 1) - 1);
        this.#inFlightTotal -= 1;
        this.#pump();
      });
      this.#attempts.add(attempt);
    }
  }

  /** One attempt of `job`, recorded; schedules the next one when it failed and attempts remain. Never rejects. */
  async #attempt(job: Job): Promise<void> {
    const { delivery, event } = job;
    const webhook = this.#webhookById(delivery.webhookId);
    // Deleted since (its deliveries went with it), or claimed by another process meanwhile: renewed (one
    // statement) only when the claim may not outlast this attempt; a fresh one does (a store statement less
    // per delivery: bench/events/delivery-cost.mjs).
    const mine = webhook !== undefined && await this.#holdFor(job);
    if (!webhook || !mine) {
      this.#held.delete(delivery.id);
      return;
    }
    const number = delivery.attempts.length + 1;
    const sentAt = this.#o.clock.now();
    const payload: WebhookPayload = { ...toSandboxEvent(event), delivery: { id: delivery.id, webhookId: webhook.id, attempt: number, sentAt: new Date(sentAt).toISOString() } };
    const body = JSON.stringify(payload);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'ramify-webhooks/1',
      [WEBHOOK_SIGNATURE_HEADER]: signWebhookBody(webhook.secret, body),
      [WEBHOOK_TIMESTAMP_HEADER]: String(Math.floor(sentAt / 1000)),
      [WEBHOOK_ID_HEADER]: webhook.id,
      [WEBHOOK_EVENT_HEADER]: payload.id,
      [WEBHOOK_DELIVERY_HEADER]: delivery.id,
    };
    const started = performance.now();
    let statusCode: number | null = null;
    let error: string | null = null;
    let permanent = false;
    try {
      statusCode = (await this.#o.sender.post({ url: webhook.url, headers, body, timeoutMs: this.#t.timeoutMs, signal: this.#stopping.signal })).statusCode;
      if (statusCode < 200 || statusCode > 299) error = `the receiver answered ${statusCode}`;
    } catch (err) {
      error = messageOf(err);
      permanent = err instanceof WebhookDestinationRefused;
    }
    const durationMs = Math.round(performance.now() - started);
    if (this.#stopping.signal.aborted) return; // Cut short by a stop: not an attempt; it stays pending.
    delivery.attempts.push({ at: sentAt, statusCode, error, durationMs });
    const retry = error !== null && !permanent && number < this.#t.maxAttempts && !this.#closed;
    delivery.status = error === null ? 'delivered' : retry ? 'pending' : 'failed';
    const waitMs = retry ? this.#backoffMs(number) : 0;
    delivery.nextAttemptAt = retry ? this.#o.clock.now() + waitMs : null;
    if (!retry) this.#held.delete(delivery.id);
    const claim = this.#claim(waitMs);
    const claimedUntilMs = performance.now() + claim.leaseMs;
    const recorded = await this.#o.store.updateDelivery(delivery, retry ? claim : undefined).then(() => true, (err: unknown) => {
      this.#o.logger.warn('webhooks: recording an attempt failed', { deliveryId: delivery.id, error: messageOf(err) });
      return false;
    });
    job.claimedUntilMs = recorded ? claimedUntilMs : 0; // Not recorded: the claim was not extended.
    if (retry) this.#schedule(job, delivery.nextAttemptAt as number);
    else if (error !== null) this.#o.logger.warn('webhooks: delivery failed', { webhookId: webhook.id, deliveryId: delivery.id, attempts: number, error });
  }

  /** Whether `job`'s claim holds through an attempt (`timeoutMs`), renewing it when it may not. Never rejects. */
  async #holdFor(job: Job): Promise<boolean> {
    if (performance.now() + this.#t.timeoutMs + CLAIM_MARGIN_MS <= job.claimedUntilMs) return true;
    const claim = this.#claim(this.#t.timeoutMs);
    const claimedUntilMs = performance.now() + claim.leaseMs;
    if (!(await this.#o.store.renewDeliveryClaim(job.delivery.id, claim).catch(() => false))) return false;
    job.claimedUntilMs = claimedUntilMs;
    return true;
  }

  /** Wait after failed attempt `n` (1-based), ms: `retryBaseMs` × 2^(n-1), ±20 % jitter, at most `retryMaxMs`. */
  #backoffMs(n: number): number {
    const base = Math.min(this.#t.retryMaxMs, this.#t.retryBaseMs * 2 ** (n - 1));
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  #webhookById(id: string): WebhookRecord | undefined {
    for (const list of this.#webhooks.values()) {
      const found = list.find((w) => w.id === id);
      if (found) return found;
    }
    return undefined;
  }

  /** Read every webhook from the store; a load that ends after a later one does not overwrite it. */
  async #reload(): Promise<void> {
    const since = this.#refreshes;
    const load = ++this.#loads;
    const all = await this.#o.store.listWebhooks();
    if (load < this.#applied) return;
    this.#applied = load;
    const byTeam = new Map<string, WebhookRecord[]>();
    for (const teamId of this.#webhooks.keys()) byTeam.set(teamId, []);
    for (const webhook of all) byTeam.set(webhook.teamId, [...(byTeam.get(webhook.teamId) ?? []), webhook]);
    // A team refreshed meanwhile keeps its newer list.
    for (const [teamId, list] of byTeam) if ((this.#refreshedAt.get(teamId) ?? 0) <= since) this.#webhooks.set(teamId, list);
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
