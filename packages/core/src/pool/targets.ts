/**
 * What the warm pool should hold right now: one target per template image and runtime, with the
 * resources a create that names only the template gets (the core's default cpuCount and memoryMB, the
 * runtime's default disk), within the memory budget.
 */
import type { RuntimeName } from '@ramify/contracts';
import type { Core } from '../context.js';
import { DEFAULT_TEAM_ID } from '../access/actor.js';
import { findVisibleTemplate } from '../catalog/templates.js';
import type { TemplateRecord } from '../ports/store.js';
import { AUTO_WINDOW_MS, type WarmPoolConfig } from '@ramify/contracts';

/** What makes pooled sandboxes interchangeable: a create can claim one only when all of these match. */
export interface PoolKey {
  templateId: string;
  runtime: RuntimeName;
  /** The template image the sandbox was restored from (a rebuild makes a new one: old entries are stale). */
  snapshotId: string;
  rootfsDir: string;
  cpuCount: number;
  memoryMB: number;
  /** MiB; null for a runtime without a disk of its own. */
  diskSizeMB: number | null;
}

/** How many idle sandboxes of `key` the pool keeps. */
export interface PoolTarget extends PoolKey {
  templateName: string;
  envs: Record<string, string>;
  count: number;
}

/** True when two keys describe interchangeable sandboxes. */
export function sameKey(a: PoolKey, b: PoolKey): boolean {
  return (
    a.templateId === b.templateId && a.runtime === b.runtime && a.snapshotId === b.snapshotId && a.rootfsDir === b.rootfsDir &&
    a.cpuCount === b.cpuCount && a.memoryMB === b.memoryMB && a.diskSizeMB === b.diskSizeMB
  );
}

/** The key of `template`'s image on `runtime` with the default resources; null when it has none or the runtime is not wired. */
export function defaultKey(core: Core, template: TemplateRecord, runtime: RuntimeName | undefined): PoolKey | null {
  const wired = runtime === undefined ? core.runtimes[0] : core.runtimes.find((r) => r.name === runtime);
  if (!wired) return null;
  const images = template.images.length > 0 ? template.images : [{ runtime: template.runtime, snapshotId: template.snapshotId }];
  const image = images.find((i) => i.runtime === wired.name);
  if (!image) return null;
  return {
    templateId: template.id,
    runtime: wired.name,
    snapshotId: image.snapshotId,
    rootfsDir: template.rootfsDir,
    cpuCount: core.options.defaultCpuCount,
    memoryMB: core.options.defaultMemoryMB,
    diskSizeMB: wired.capabilities.rootDisk?.defaultSizeMB ?? null,
  };
}

/**
 * The targets for `config`: fixed sizes (templates looked up as the default team sees them: its own and
 * the shared ones; a name not found is skipped), or for `auto` one per template and runtime in `recentUse`
 * (key `templateId|runtime` → last use, ms) within the window, most recent first. Either way cut to
 * `budgetMB` of `memoryMB`.
 */
export async function poolTargets(core: Core, config: WarmPoolConfig, budgetMB: number, recentUse: ReadonlyMap<string, number>): Promise<PoolTarget[]> {
  const wanted: Array<{ template: TemplateRecord; runtime: RuntimeName | undefined; count: number }> = [];
  if (config.mode === 'sizes') {
    for (const size of config.sizes) {
      const template = await findVisibleTemplate(core, size.template, DEFAULT_TEAM_ID);
      if (template && size.count > 0) wanted.push({ template, runtime: size.runtime, count: size.count });
    }
  } else if (config.mode === 'auto') {
    const since = core.clock.now() - AUTO_WINDOW_MS;
    const recent = [...recentUse].filter(([, at]) => at >= since).sort((a, b) => b[1] - a[1]);
    for (const [key] of recent) {
      const [templateId, runtime] = key.split('|') as [string, RuntimeName];
      const template = await core.store.getTemplate(templateId);
      if (template) wanted.push({ template, runtime, count: 1 });
    }
  }
  const targets: PoolTarget[] = [];
  let memoryMB = 0;
  for (const want of wanted) {
    const key = defaultKey(core, want.template, want.runtime);
    if (!key || targets.some((t) => sameKey(t, key))) continue;
    const room = Math.floor((budgetMB - memoryMB) / key.memoryMB);
    const count = Math.min(want.count, room);
    if (count <= 0) continue;
    memoryMB += count * key.memoryMB;
    targets.push({ ...key, templateName: want.template.name, envs: { ...want.template.envs }, count });
  }
  return targets;
}

/** The `recentUse` key of a template and runtime. */
export function useKey(templateId: string, runtime: RuntimeName): string {
  return `${templateId}|${runtime}`;
}
