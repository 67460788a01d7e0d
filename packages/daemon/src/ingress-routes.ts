/**
 * `IngressRouteFeed`: keeps the ingress thread's route cache (`@ramify/network`'s `IngressThread`) in step
 * with core. At start, a route for every sandbox not killed; from then on a new route on every state
 * change (core's state events: running with its slot address, pausing, paused, killing...) and every change
 * of its exposed ports (ingress events), posted from the event itself, so before the use-case that made the
 * change acknowledges it; a killed sandbox's route is removed, and so is one recorded on another host (a cluster's shared store). Token verifiers are read from the store once
 * per sandbox (a token never changes once made); until one is read the route has none, and a request to a
 * token port asks core instead. See docs/design/INGRESS.md, "Where the ingress runs".
 */
import { tokenVerifier, type Core, type IngressRoute, type SandboxRecord } from '@ramify/core';
import { slotAddresses, type SlotLayout } from '@ramify/network';
import type { SandboxState } from '@ramify/contracts';

/** Where routes go (the ingress thread). */
export interface RouteSink {
  setRoute(route: IngressRoute): void;
  deleteRoute(sandboxId: string): void;
}

/** Every state but `killed`: the sandboxes that get a route. */
const LIVE: SandboxState[] = ['creating', 'running', 'pausing', 'paused', 'resuming', 'killing', 'error'];

export class IngressRouteFeed {
  private readonly verifiers = new Map<string, string>();
  private readonly fetching = new Set<string>();
  /** The last record seen per sandbox (to post again once its verifier is read). */
  private readonly latest = new Map<string, SandboxRecord>();
  private readonly stops: Array<() => void> = [];

  constructor(
    private readonly core: Core,
    private readonly layout: SlotLayout,
    private readonly sink: RouteSink,
  ) {}

  /** Subscribe to core's events, then post a route for every live sandbox in the store. Rejects when the store does. */
  async start(): Promise<void> {
    const { core } = this;
    // Sandboxes an event updated while the store was being read: the event's record is the newer one.
    const updated = new Set<string>();
    this.stops.push(
      core.events.onState((e) => {
        updated.add(e.sandboxId);
        this.update(e.sandbox);
      }),
      core.events.onIngress((e) => {
        updated.add(e.sandboxId);
        this.update(e.sandbox);
      }),
    );
    let cursor: string | undefined;
    do {
      const page = await core.store.listSandboxes({ states: LIVE, limit: 1000, ...(cursor ? { cursor } : {}) });
      for (const record of page.sandboxes) if (!updated.has(record.id)) this.update(record);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  stop(): void {
    for (const stop of this.stops.splice(0)) stop();
  }

  private update(record: SandboxRecord): void {
    // Another host's sandbox (a shared store): no route, so its requests ask core, which refuses or moves it.
    if (record.state === 'killed' || (record.hostId !== null && record.hostId !== this.core.hostId)) {
      this.latest.delete(record.id);
      this.verifiers.delete(record.id);
      this.sink.deleteRoute(record.id);
      return;
    }
    this.latest.set(record.id, record);
    const verifier = this.verifiers.get(record.id) ?? null;
    this.sink.setRoute(this.routeOf(record, verifier));
    if (verifier === null && record.ingress.ports.some((p) => p.access === 'token')) this.readVerifier(record.id);
  }

  private routeOf(record: SandboxRecord, verifier: string | null): IngressRoute {
    const slotAddress = record.state === 'running' && record.slot !== null ? slotAddresses(this.layout, record.slot).slotAddress : null;
    return { sandboxId: record.id, state: record.state, slotAddress, ports: record.ingress.ports.map((p) => ({ port: p.port, access: p.access })), tokenVerifier: verifier };
  }

  private readVerifier(sandboxId: string): void {
    if (this.fetching.has(sandboxId)) return;
    this.fetching.add(sandboxId);
    this.core.store.getAccessToken(sandboxId).then(
      (token) => {
        this.fetching.delete(sandboxId);
        const record = this.latest.get(sandboxId);
        if (token === null || !record) return;
        const verifier = tokenVerifier(token);
        this.verifiers.set(sandboxId, verifier);
        this.sink.setRoute(this.routeOf(record, verifier));
      },
      (err: unknown) => {
        this.fetching.delete(sandboxId);
        this.core.logger.warn('ingress: reading a sandbox\'s access token for the route cache failed; its requests ask core', { sandboxId, error: err instanceof Error ? err.message : String(err) });
      },
    );
  }
}
