/**
 * What the snapshot storage conformance suite needs from an implementation under test (containerd's
 * `snapshots/testsuite` habit): a factory of fresh storages, and, for storages with a remote tier, the
 * controls its durability cases use. A case a harness cannot serve is skipped with its reason.
 */
import type { SnapshotStorage } from '@ramify/core';

/** One storage under test on its own local directory (and, with a remote tier, its own bucket prefix). */
export interface StorageUnderTest {
  storage: SnapshotStorage;
  /** Stop its background work (a later instance on the same directory resumes it). */
  close(): Promise<void>;
  /** Present for storages with a remote tier: controls bound to this storage's cache and bucket prefix. */
  remote?: RemoteControls;
}

export interface RemoteControls {
  /** Another host: a fresh storage on an empty local directory sharing this one's bucket prefix. */
  otherHost(): Promise<StorageUnderTest>;
  /** A new instance on this one's local directory (a daemon restart); close this one first. */
  restart(): Promise<StorageUnderTest>;
  /** Whether this host's cache holds `snapshotId`'s image. */
  isCached(snapshotId: string): Promise<boolean>;
  /** Overwrite one stored chunk of `snapshotId` in the bucket with other bytes of the same length. */
  corruptChunk(snapshotId: string): Promise<void>;
  /** Bytes stored in the bucket under this storage's prefix. */
  storedBytes(): Promise<number>;
  /** Delete unreferenced chunks now (no grace period); null when the storage skipped it (transfers queued). */
  collectGarbage(): Promise<{ deleted: number } | null>;
}

export interface CreateOptions {
  /** Local cache budget, bytes (remote tiers only): durable images beyond it are evicted. */
  cacheBudgetBytes?: number;
}

export interface StorageHarness {
  name: string;
  /** A fresh, empty storage. */
  create(options?: CreateOptions): Promise<StorageUnderTest>;
  /** Present for storages with a remote tier: its server, to play an outage (same address, same objects after). */
  remoteServer?: { stop(): Promise<void>; start(): Promise<void> };
}
