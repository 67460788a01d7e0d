/**
 * `LocalTemplateBuilder`: core's `TemplateBuilder` port on this host. Builds with {@link buildTemplate}
 * (layer cache under `<dataDir>/templates/`) once per runtime asked for (the root filesystem and files
 * layers are shared; each runtime boots and checkpoints its own image) and registers the result in the
 * Store: each image as a `template` snapshot row, then the template row (same id as the previous build of
 * that name) listing every runtime's image made on the same root filesystem, and the flattened `envs`
 * (the parent's overridden by the spec's) that every sandbox of the template starts with. A template
 * belongs to the team it is built for (`TemplateBuildOptions.teamId`, default the default team, whose
 * templates are shared): its name and an earlier build are that team's, `from` is the team's own
 * template or a shared one (docs/design/TEAMS.md).
 */
import { DEFAULT_TEAM, RamifyError, type TemplateBuildEvent, type TemplateSpec } from '@ramify/contracts';
import type { Runtime, Store, TemplateBuildOptions, TemplateBuilder, TemplateRecord } from '@ramify/core';
import { join } from 'node:path';
import { buildTemplate, type BuiltTemplate, type TemplateBuildDeps, type TemplateRegistry } from './build.js';
import type { SlotAllocator } from './image-layer.js';
import { LayerCache } from './layer-cache.js';

/** The Store calls the builder makes. */
export type TemplateStore = Pick<Store, 'findTemplateByName' | 'putTemplate' | 'getSnapshot' | 'insertSnapshot' | 'updateSnapshot' | 'allocateSlot' | 'releaseSlot'>;

export interface LocalTemplateBuilderOptions extends Omit<TemplateBuildDeps, 'registry' | 'slots' | 'signal' | 'runtime'> {
  store: TemplateStore;
  /** Runtimes images can be built for; the first is the default when a build does not name any. */
  runtimes: Runtime[];
  /** This host's id (`Core.hostId`): build sandboxes lease its network slots, and its images are recorded as held here. */
  hostId: string;
}

export class LocalTemplateBuilder implements TemplateBuilder {
  constructor(private readonly options: LocalTemplateBuilderOptions) {}

  /**
   * Build or reuse `spec`, then persist it. Emits `step` and `log` events only (the caller emits
   * `done`/`error`). Rejects like {@link buildTemplate}, plus the Store's `CONFLICT`.
   */
  async build(spec: TemplateSpec, options: TemplateBuildOptions): Promise<TemplateRecord> {
    const { store, runtimes: available, hostId, ...deps } = this.options;
    const slots: SlotAllocator = { allocateSlot: (holderId) => store.allocateSlot(holderId, hostId), releaseSlot: (holderId) => store.releaseSlot(holderId) };
    const onEvent = (event: TemplateBuildEvent): void => {
      if (event.type === 'step' || event.type === 'log') options.onEvent(event);
    };
    const runtimes = (options.runtimes ?? available.map((r) => r.name)).map((name) => {
      const runtime = available.find((r) => r.name === name);
      if (!runtime) throw new RamifyError('RUNTIME_UNAVAILABLE', `runtime '${name}' is not available on this host`, { runtime: name });
      return runtime;
    });
    if (runtimes.length === 0) throw new RamifyError('RUNTIME_UNAVAILABLE', 'no runtime is available on this host to build templates');
    const teamId = options.teamId ?? DEFAULT_TEAM;
    const registry: TemplateRegistry = {
      findTemplateByName: (name) => store.findTemplateByName(name, teamId),
      findParentTemplate: async (name) => (await store.findTemplateByName(name, teamId)) ?? (await store.findTemplateByName(name, DEFAULT_TEAM)),
    };
    const builds: BuiltTemplate[] = [];
    for (const runtime of runtimes) {
      // With several runtimes each one's steps are named after it ("microvm: boot"), so progress reads unambiguously.
      const onRuntimeEvent: typeof onEvent =
        runtimes.length > 1 ? (event) => onEvent(event.type === 'step' ? { ...event, step: `${runtime.name}: ${event.step}` } : event) : onEvent;
      // Every runtime's image under the first one's template id (a new template has none before the first build).
      const templateId = builds[0]?.templateId;
      const built = await buildTemplate(spec, { ...deps, runtime, registry, slots, signal: options.signal, ...(templateId ? { templateId } : {}) }, onRuntimeEvent);
      await this.registerImage(built, teamId);
      builds.push(built);
    }
    return this.registerTemplate(builds, teamId);
  }

  /**
   * Delete temporary layer directories of builds that died with an earlier daemon (reconcile).
   * @returns the directory names removed.
   */
  async sweep(): Promise<string[]> {
    return new LayerCache(join(this.options.dataDir, 'templates')).sweepTemporary();
  }

  /** Insert (or refresh) the `template` snapshot row of one runtime's image (a new row is `teamId`'s). */
  private async registerImage(built: BuiltTemplate, teamId: string): Promise<void> {
    const { store } = this.options;
    const resources = this.options.resources ?? { cpuCount: 1, memoryMB: 1024, diskSizeMB: null };
    const row = await store.getSnapshot(built.snapshotId);
    if (!row) {
      await store.insertSnapshot({
        id: built.snapshotId,
        teamId,
        name: null,
        kind: 'template',
        status: 'ready',
        runtime: built.snapshot.runtime,
        templateId: built.templateId,
        sandboxId: null,
        parentSnapshotId: null,
        sizeBytes: built.snapshot.sizeBytes,
        createdAt: Date.parse(built.snapshot.createdAt),
        cpuCount: resources.cpuCount,
        memoryMB: resources.memoryMB,
        // Booted on the runtime's default disk: sandboxes from it get the runtime's default size.
        diskSizeMB: null,
        // The image is only valid on the rootfs it was booted on (the files layer; its path is keyed by content).
        rootfsDir: built.rootfsDir,
        // Sandboxes from a template image get their template's envs (looked up at create), not a copy.
        envs: null,
        // A template image carries no egress policy: its sandboxes start open unless they ask for one.
        egress: null,
        hostId: this.options.hostId,
      });
    } else {
      // An image is named by its content: a template deleted and built again (a new id) finds its old row,
      // as did a second runtime's image when each runtime's build made its own id. The row then names the
      // template that lists it (another team's template sharing the image keeps the row as it is).
      const stale = row.teamId === teamId && row.templateId !== built.templateId;
      if (stale || row.sizeBytes !== built.snapshot.sizeBytes || row.status !== 'ready') {
        await store.updateSnapshot(built.snapshotId, { sizeBytes: built.snapshot.sizeBytes, status: 'ready', ...(stale ? { templateId: built.templateId } : {}) });
      }
    }
  }

  /**
   * Write the template row: this build's images, plus images of other runtimes the row already lists
   * that were made on the same root filesystem (a rebuild that changed the rootfs drops them).
   */
  private async registerTemplate(builds: BuiltTemplate[], teamId: string): Promise<TemplateRecord> {
    const { store } = this.options;
    const first = builds[0] as BuiltTemplate;
    const current = await store.findTemplateByName(first.name, teamId);
    const images = builds.map((b) => ({ runtime: b.snapshot.runtime, snapshotId: b.snapshotId }));
    const sameRootfs = current !== null && current.id === first.templateId && current.rootfsDir === first.rootfsDir;
    const sameImages = sameRootfs && images.every((n) => current.images.some((i) => i.runtime === n.runtime && i.snapshotId === n.snapshotId));
    // A row written before envs were recorded (migration 7: `{}`) is refreshed by a rebuild even when every image was reused.
    if (sameImages && sameEnvs(current.envs, first.envs)) return current;
    const kept = sameRootfs ? current.images.filter((i) => !images.some((n) => n.runtime === i.runtime)) : [];
    const keepDefault = current && kept.some((i) => i.runtime === current.runtime);
    const record: TemplateRecord = {
      id: first.templateId,
      teamId,
      name: first.name,
      runtime: keepDefault ? current.runtime : first.snapshot.runtime,
      specHash: keepDefault ? current.specHash : first.specHash,
      snapshotId: keepDefault ? current.snapshotId : first.snapshotId,
      images: [...images, ...kept],
      parent: first.parent,
      // The flattened envs (parent's, overridden by the spec's): every sandbox of the template starts with them.
      envs: { ...first.envs },
      // Images kept from an earlier build on the same rootfs count too (their size is in the current row's).
      sizeBytes: Math.max(...builds.map((b) => b.sizeBytes), kept.length > 0 && current ? current.sizeBytes : 0),
      rootfsDir: first.rootfsDir,
      createdAt: Date.now(),
    };
    await store.putTemplate(record);
    return record;
  }
}

/** Whether two environments hold the same names with the same values (order aside). */
function sameEnvs(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}
