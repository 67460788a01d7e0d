/**
 * TEST SUPPORT for core's own tests: a core wired to the fakes, a real SQLite store (`@ramify/store`,
 * loaded at run time because store depends on core), and a `base` template whose image is a fake guest.
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Core, CoreOptions } from '../context.js';
import { closeCoreSinks, createCore } from '../core.js';
import { silentLogger } from '../ports/logger.js';
import type { Store } from '../ports/store.js';
import type { SnapshotStorage } from '../ports/snapshot-storage.js';
import type { FakeGuestState } from './fake-agent.js';
import { FakeEgressEnforcer } from './fake-egress.js';
import { FakeNetworkEnforcer } from './fake-networks.js';
import { DirSnapshotStorage, FakeNetwork, FakeRuntime, ManualClock } from './fake-ports.js';

export interface TestWorld {
  dir: string;
  core: Core;
  store: Store;
  runtime: FakeRuntime;
  network: FakeNetwork;
  storage: DirSnapshotStorage;
  clock: ManualClock;
  /** The egress enforcer wired into `core` (records policies per slot). */
  egress: FakeEgressEnforcer;
  /** The private network enforcer wired into `core` (records memberships per slot). */
  networks: FakeNetworkEnforcer;
  /** The `base` template's root filesystem: a real (empty) directory in `dir` the fake runtime never reads. */
  rootfsDir: string;
  /** Close sessions and the store (a daemon stop); the files stay. */
  close(): Promise<void>;
  /** Close, then delete the temp directory. */
  dispose(): Promise<void>;
}

/** Open the real SQLite store at `path` (dynamic import: `@ramify/store` depends on core, so no static edge). */
export async function openSqliteStore(path: string): Promise<Store> {
  const specifier = '@ramify/store';
  const mod = (await import(specifier)) as { SqliteStore: new (options: { path: string }) => Store };
  return new mod.SqliteStore({ path });
}

export interface SeedTemplateOptions {
  /**
   * The template's root filesystem directory (restores check that it exists). Default: the OS temp
   * directory, which exists; the fake runtime never reads it.
   */
  rootfsDir?: string;
}

/** The host id of every test world's core (one host). */
export const TEST_HOST_ID = 'host-test';

/** Write a template image into `storage` and register template `base` (id `tpl_base`, image `snap_tpl`) for it. */
export async function seedTemplate(store: Store, storage: SnapshotStorage, guest: FakeGuestState, options: SeedTemplateOptions = {}): Promise<void> {
  const rootfsDir = options.rootfsDir ?? tmpdir();
  const { imageDir } = await storage.prepare('snap_tpl');
  await mkdir(imageDir);
  await writeFile(join(imageDir, 'guest.json'), JSON.stringify(guest));
  const manifest = await storage.commit({ snapshotId: 'snap_tpl', runtime: 'gvisor', templateId: 'tpl_base', parentSnapshotId: null });
  await store.insertSnapshot({
    id: 'snap_tpl', teamId: 'default', name: null, kind: 'template', status: 'ready', runtime: 'gvisor', templateId: 'tpl_base', sandboxId: null,
    parentSnapshotId: null, sizeBytes: manifest.sizeBytes, createdAt: 1, cpuCount: 1, memoryMB: 512, diskSizeMB: null, rootfsDir, envs: null, egress: null, hostId: TEST_HOST_ID,
  });
  await store.putTemplate({ id: 'tpl_base', teamId: 'default', name: 'base', runtime: 'gvisor', specHash: 'h', snapshotId: 'snap_tpl', images: [{ runtime: 'gvisor', snapshotId: 'snap_tpl' }], parent: null, envs: {}, sizeBytes: manifest.sizeBytes, rootfsDir, createdAt: 1 });
}

/** A fresh world; `reopen` builds a second core over the same store file, storage and runtime (a daemon restart). */
export async function createTestWorld(options: Partial<CoreOptions> = {}, reuse?: TestWorld): Promise<TestWorld> {
  const dir = reuse?.dir ?? (await mkdtemp(join(tmpdir(), 'ramify-core-')));
  const store = await openSqliteStore(join(dir, 'ramify.db'));
  const runtime = reuse?.runtime ?? new FakeRuntime();
  const network = reuse?.network ?? new FakeNetwork();
  const storage = reuse?.storage ?? new DirSnapshotStorage(join(dir, 'snapshots'));
  const clock = reuse?.clock ?? new ManualClock();
  const egress = reuse?.egress ?? new FakeEgressEnforcer();
  const networks = reuse?.networks ?? new FakeNetworkEnforcer();
  const rootfsDir = reuse?.rootfsDir ?? join(dir, 'rootfs', 'base-1');
  if (!reuse) {
    await mkdir(rootfsDir, { recursive: true });
    await seedTemplate(store, storage, { files: { '/root/hello.txt': 'hi' }, endpoints: [], identities: [] }, { rootfsDir });
  }
  const core = createCore({
    hostId: TEST_HOST_ID, store, runtimes: [runtime], network, storage, clock, logger: silentLogger, connectAgent: runtime.connectAgent, egressEnforcer: egress, networkEnforcer: networks,
    // No warm slot pool by default: tests see every namespace torn down on release (see prewarm.test.ts).
    options: { quietNetworkPollMs: 1_000, prewarmSlots: 0, ...options },
  });
  return {
    dir, core, store, runtime, network, storage, clock, egress, networks, rootfsDir,
    close: async () => {
      await core.sessions.closeAll();
      await closeCoreSinks(core);
      await store.close();
    },
    dispose: async () => {
      await core.sessions.closeAll();
      await closeCoreSinks(core);
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Give the world's template `name` (default the seeded `base`) these envs (what a build of a spec with `envs` records). */
export async function setTemplateEnvs(w: TestWorld, envs: Record<string, string>, name = 'base'): Promise<void> {
  const template = await w.store.findTemplateByName(name, 'default');
  if (!template) throw new Error(`no template ${name} in the test world`);
  await w.store.putTemplate({ ...template, envs });
}

/** The envs the fake guest of `sandboxId` was last told (its last setIdentity), if any. */
export function lastGuestEnvs(w: TestWorld, sandboxId: string): Record<string, string> | undefined {
  return w.runtime.guest(sandboxId).identities.at(-1)?.envs;
}
