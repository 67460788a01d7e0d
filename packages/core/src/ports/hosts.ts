/**
 * The host registry port (issue 16, docs/design/SCALE-OUT.md): the host daemons (`ramify serve --role host`)
 * that share one store, their leases, capacity and load, and placement reservations. Part of the
 * {@link Store}; `@ramify/store` implements it on SQLite and Postgres.
 *
 * Clocks: lease times are the **database's** clock (Postgres `now()`; SQLite: the store's process, which is
 * the caller's), never a host's, so hosts never compare clocks with each other. A host whose own clock is
 * more than `maxClockSkewMs` off the database's is refused at registration (`HOST_CLOCK_SKEW`).
 *
 * Lifecycle of a host row: `active` (registered, heartbeating; placement may choose it) → `draining`
 * (SIGTERM: placement skips it; it pauses its sandboxes and finishes uploads) → `gone` (drained, or its lease
 * expired: {@link HostRegistry.expireHosts}). A host that registers again is `active` again.
 * Times are ms since the epoch; memory is MiB.
 */

import type { SandboxState } from '@ramify/contracts';

/** `active`: takes work; `draining`: finishing, placement skips it; `gone`: stopped or lost. */
export type HostState = 'active' | 'draining' | 'gone';

/** What a host offers placement. */
export interface HostCapacity {
  /** MiB of sandbox memoryMB it accepts in all. */
  memoryMB: number;
  /** vCPUs (sandbox cpuCount) it accepts in all. */
  cpus: number;
  /** Network slots: most sandboxes holding an address at once. */
  slots: number;
}

/** What a host reported at its last heartbeat (informational; placement counts the store's rows itself). */
export interface HostLoad {
  runningSandboxes: number;
  /** Sum of the memoryMB of its running sandboxes. */
  memoryReservedMB: number;
}

export interface HostRecord {
  id: string;
  /** Where the API role forwards this host's calls, e.g. `http://10.0.0.5:7423`. */
  url: string;
  state: HostState;
  /** The database's clock: after this, without a heartbeat, the host is lost. */
  leaseExpiresAt: number;
  lastHeartbeatAt: number;
  /** When this registration happened (the database's clock). */
  startedAt: number;
  capacity: HostCapacity;
  load: HostLoad;
  /** Template images (snapshot ids) this host holds in its local cache. */
  cachedImageIds: string[];
  /** Snapshot images this host holds that are not yet durable in remote storage (at its last heartbeat). */
  pendingUploadIds: string[];
  /** `host:port` where API processes reach this host's ingress listener (port URLs); null: it runs none. */
  ingressAddress: string | null;
  /** `host:port` where API processes reach this host's SSH gateway; null: it runs none. */
  sshAddress: string | null;
}

export interface HostRegistration {
  id: string;
  url: string;
  capacity: HostCapacity;
  cachedImageIds: string[];
  pendingUploadIds: string[];
  /** `host:port` of its ingress listener and SSH gateway as API processes reach them; absent: none. */
  ingressAddress?: string;
  sshAddress?: string;
  /** The host's own clock when it asked (ms), compared with the database's. */
  hostNowMs: number;
  leaseMs: number;
  /** Refuse the host when its clock is further off the database's than this (ms). */
  maxClockSkewMs: number;
}

export interface HostHeartbeat {
  load: HostLoad;
  cachedImageIds: string[];
  pendingUploadIds: string[];
  leaseMs: number;
}

/** A placement request: one sandbox's needs, `count` times. */
export interface PlacementRequest {
  /** The reservation's id (the API makes it; the host it names consumes it). */
  reservationId: string;
  /** One sandbox's memory (MiB) and vCPUs. */
  memoryMB: number;
  cpus: number;
  /** How many such sandboxes (a fork's children), each with a network slot; default 1. */
  count?: number;
  /** The template image the sandbox starts from: hosts caching it are preferred. */
  imageId: string | null;
  /** Only this host (a fork goes to its parent's, a resume to the one holding the image); absent: any. */
  hostId?: string;
  /** How long the reservation holds the capacity if the host never consumes it (ms). */
  ttlMs: number;
  /** How many fitting hosts are compared (least loaded wins); default 3. */
  sampleSize?: number;
}

/** Capacity held on one host for one sandbox (or a fork's children) until the host records it (or `expiresAt`). */
export interface PlacementReservation {
  id: string;
  hostId: string;
  /** The host's URL at the time of placement. */
  url: string;
  /** Held in all: `sandboxes` × one sandbox's memory (MiB) and vCPUs. */
  memoryMB: number;
  cpus: number;
  /** How many sandboxes (network slots) it holds: 1 for a create or resume, N for a fork of N. */
  sandboxes: number;
  expiresAt: number;
}

/** What {@link HostRegistry.expireHosts} did to one host whose lease expired. */
export interface LostHost {
  hostId: string;
  /** Its sandboxes that were running (or mid-operation): now `error` with a `HOST_LOST` reason. */
  lostSandboxIds: string[];
  /** Each of those sandboxes' state before (the transition's `from`, for its event). */
  previousStates: Record<string, SandboxState>;
}

/** See the module doc. */
export interface HostRegistry {
  /**
   * Register (or re-register) host `id` as `active` with a fresh lease.
   * Rejects `HOST_CLOCK_SKEW` (details `skewMs`, `maxSkewMs`) when the host's clock is too far off the database's.
   */
  registerHost(registration: HostRegistration): Promise<HostRecord>;
  /**
   * Renew host `id`'s lease and record its load. Rejects `HOST_NOT_FOUND`, and `HOST_LOST` when the row is
   * `gone` (its lease expired and its sandboxes were written off: it must register and reconcile again).
   */
  heartbeatHost(id: string, heartbeat: HostHeartbeat): Promise<HostRecord>;
  /** Set host `id`'s state (`draining`, `gone`). Rejects `HOST_NOT_FOUND`. */
  setHostState(id: string, state: HostState): Promise<HostRecord>;
  getHost(id: string): Promise<HostRecord | null>;
  /** Every host, by id. */
  listHosts(): Promise<HostRecord[]>;
  /** The database's clock now (ms). */
  databaseNow(): Promise<number>;
  /**
   * Choose a host for `request` and hold its capacity, in one transaction: an `active` host with an
   * unexpired lease whose sandboxes (creating to killing) plus live reservations leave room for it (memory,
   * CPUs, slots); among a few sampled (those caching `imageId` first), the least loaded by memory. The chosen
   * host's row is locked while its load is counted again (Postgres `FOR UPDATE SKIP LOCKED`, then waiting if
   * every candidate was locked), so concurrent placements never over-commit a host.
   * With `hostId`, only that host (a fork's children go to their parent's host), with the same locking.
   * Rejects `NO_HOST_CAPACITY` (details `hosts`, `memoryMB`, `cpus`; with `hostId` also `hostId`,
   * `sandboxes` and `missing`: which of `memory`, `CPUs`, `network slots` lack room) when none fits.
   */
  reserveHost(request: PlacementRequest): Promise<PlacementReservation>;
  /** A live (unexpired) reservation, or null. */
  getReservation(id: string): Promise<PlacementReservation | null>;
  /** Drop a reservation (consumed, or the create failed); no-op when absent. */
  releaseReservation(id: string): Promise<void>;
  /**
   * Mark every `active`/`draining` host whose lease expired `gone`, and its running (or mid-operation)
   * sandboxes `error` with a `HOST_LOST` reason, in one transaction per call; rows another process is
   * sweeping are skipped (Postgres `SKIP LOCKED`). Paused sandboxes are left as they are.
   */
  expireHosts(): Promise<LostHost[]>;
  /**
   * The secret called `name` that every process of this store shares (hex, 256 random bits), made and
   * stored by the first process to ask. The API role signs the calls it forwards with `forwarding`
   * (docs/design/SCALE-OUT.md). Only processes with access to the store can read it.
   */
  clusterSecret(name: string): Promise<string>;
}
