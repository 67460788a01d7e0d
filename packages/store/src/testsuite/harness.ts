/**
 * What the store conformance suite needs of an implementation, and the records its cases are made of.
 */
import type { SandboxRecord, SnapshotRecord, Store, TemplateRecord } from '@ramify/core';
import type { StoreOptions } from '../sql-store.js';

/** One database under test: SQLite files in a temporary directory, or databases of a throwaway Postgres cluster. */
export interface StoreHarness {
  /** Shown in the suite's title (`SQLite`, `Postgres 15`). */
  name: string;
  /**
   * A store on the database called `name`: empty (migrated) at first use, the same data when opened again
   * after its last store closed (the "reopen" cases). Every case uses its own name.
   */
  open(name: string, options?: StoreOptions): Promise<Store>;
  /** Why the suite is skipped here (no Postgres binaries); absent: it runs. */
  skip?: string;
}

let seq = 0;
/** A fresh id with `prefix`, unique in the process (sortable: the counter is zero-padded). */
export function freshId(prefix: string): string {
  seq += 1;
  return `${prefix}_${String(seq).padStart(10, '0')}`;
}

/** A running gVisor sandbox of the default team, every field set (override any). */
export function sandbox(overrides: Partial<SandboxRecord> = {}): SandboxRecord {
  const id = overrides.id ?? freshId('sbx');
  return {
    id, teamId: 'default', state: 'running', runtime: 'gvisor', templateId: 'tpl_1', sourceSnapshotId: 'snap_tpl', rootfsDir: '/layers/files-1/rootfs', parentId: null,
    cpuCount: 1, memoryMB: 512, diskSizeMB: null, metadata: {}, envs: { A: '1' }, createdAt: 1_700_000_000_000 + seq, timeoutMs: 300_000, onTimeout: 'pause',
    endAt: 1_700_000_300_000, slot: null, pausedSnapshotId: null, error: null, operation: null, ingress: { ports: [], autoResume: null }, autoPause: null,
    lastActiveAt: null, hostId: null, ...overrides,
  };
}

/** A ready pause image of the default team (override any). */
export function snapshot(overrides: Partial<SnapshotRecord> = {}): SnapshotRecord {
  const id = overrides.id ?? freshId('snap');
  return {
    id, teamId: 'default', name: null, kind: 'pause', status: 'ready', runtime: 'gvisor', templateId: 'tpl_1', sandboxId: null, parentSnapshotId: null,
    sizeBytes: 100, createdAt: 1_700_000_000_000 + seq, cpuCount: 1, memoryMB: 512, diskSizeMB: null, rootfsDir: '/layers/files-1/rootfs', envs: null, egress: null,
    hostId: null, ...overrides,
  };
}

/** A template of the default team built for gVisor (override any). */
export function template(overrides: Partial<TemplateRecord> = {}): TemplateRecord {
  return {
    id: 'tpl_a', teamId: 'default', name: 'base', runtime: 'gvisor', specHash: 'h1', snapshotId: 'snap_1', images: [], parent: null, envs: {}, sizeBytes: 1,
    rootfsDir: '/r', createdAt: 1, ...overrides,
  };
}

/** A team with no limits (override any). */
export const team = (id: string, createdAt = 1) => ({ id, createdAt, quota: { maxRunning: null, maxMemoryMB: null, maxForksPerCall: null } });

/** Open `name`, run `fn`, close whatever happens. */
export async function withStore(h: StoreHarness, name: string, fn: (store: Store) => Promise<void>, options?: StoreOptions): Promise<void> {
  const store = await h.open(name, options);
  try {
    await fn(store);
  } finally {
    await store.close();
  }
}
