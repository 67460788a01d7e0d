/**
 * `LocalTemplateBuilder`: core's `TemplateBuilder` port on this host. Builds with {@link buildTemplate}
 * (layer cache under `<dataDir>/templates/`) and registers the result in the Store: the image as a
 * `template` snapshot row, then the template row (same id as the previous build of that name).
 */
import type { TemplateBuildEvent, TemplateSpec } from '@ramify/contracts';
import type { Store, TemplateBuildOptions, TemplateBuilder, TemplateRecord } from '@ramify/core';
import { join } from 'node:path';
import { buildTemplate, type BuiltTemplate, type TemplateBuildDeps } from './build.js';
import { LayerCache } from './layer-cache.js';

/** The Store calls the builder makes. */
export type TemplateStore = Pick<Store, 'findTemplateByName' | 'putTemplate' | 'getSnapshot' | 'insertSnapshot' | 'updateSnapshot' | 'allocateSlot' | 'releaseSlot'>;

export interface LocalTemplateBuilderOptions extends Omit<TemplateBuildDeps, 'registry' | 'slots' | 'signal'> {
  store: TemplateStore;
}

export class LocalTemplateBuilder implements TemplateBuilder {
  constructor(private readonly options: LocalTemplateBuilderOptions) {}

  /**
   * Build or reuse `spec`, then persist it. Emits `step` and `log` events only (the caller emits
   * `done`/`error`). Rejects like {@link buildTemplate}, plus the Store's `CONFLICT`.
   */
  async build(spec: TemplateSpec, options: TemplateBuildOptions): Promise<TemplateRecord> {
    const { store, ...deps } = this.options;
    const onEvent = (event: TemplateBuildEvent): void => {
      if (event.type === 'step' || event.type === 'log') options.onEvent(event);
    };
    const built = await buildTemplate(spec, { ...deps, registry: store, slots: store, signal: options.signal }, onEvent);
    return this.register(built);
  }

  /**
   * Delete temporary layer directories of builds that died with an earlier daemon (reconcile).
   * @returns the directory names removed.
   */
  async sweep(): Promise<string[]> {
    return new LayerCache(join(this.options.dataDir, 'templates')).sweepTemporary();
  }

  private async register(built: BuiltTemplate): Promise<TemplateRecord> {
    const { store } = this.options;
    const resources = this.options.resources ?? { cpuCount: 1, memoryMB: 1024 };
    const row = await store.getSnapshot(built.snapshotId);
    if (!row) {
      await store.insertSnapshot({
        id: built.snapshotId,
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
        // The image is only valid on the rootfs it was booted on (the files layer; its path is keyed by content).
        rootfsDir: built.rootfsDir,
      });
    } else if (row.sizeBytes !== built.snapshot.sizeBytes || row.status !== 'ready') {
      await store.updateSnapshot(built.snapshotId, { sizeBytes: built.snapshot.sizeBytes, status: 'ready' });
    }
    const current = await store.findTemplateByName(built.name);
    if (current && current.id === built.templateId && current.specHash === built.specHash && current.rootfsDir === built.rootfsDir) return current;
    const record: TemplateRecord = {
      id: built.templateId,
      name: built.name,
      runtime: built.snapshot.runtime,
      specHash: built.specHash,
      snapshotId: built.snapshotId,
      parent: built.parent,
      sizeBytes: built.sizeBytes,
      rootfsDir: built.rootfsDir,
      createdAt: Date.now(),
    };
    await store.putTemplate(record);
    return record;
  }
}
