/**
 * Use-cases: list and build templates.
 */
import { RamifyError, type RuntimeName, type TemplateBuildEvent, type TemplateSpec } from '@ramify/contracts';
import { runtimeFor, type Core } from '../core.js';
import type { TemplateRecord } from '../ports/store.js';

/** Every template, by name. */
export async function listTemplates(core: Core): Promise<TemplateRecord[]> {
  return core.store.listTemplates();
}

/**
 * Fail fast, before any progress is streamed, when this host cannot build templates.
 * @throws RamifyError `RUNTIME_UNAVAILABLE`.
 */
export function assertCanBuildTemplates(core: Core, runtimes?: RuntimeName[]): void {
  if (!core.templateBuilder) throw new RamifyError('RUNTIME_UNAVAILABLE', 'template building is not available on this host');
  for (const runtime of runtimes ?? []) runtimeFor(core, runtime);
}

/**
 * Build (or reuse) a template, reporting progress to `onEvent`.
 * @throws RamifyError `RUNTIME_UNAVAILABLE` when no builder is wired, and the builder's errors.
 */
export async function buildTemplate(
  core: Core,
  spec: TemplateSpec,
  options: { onEvent: (event: TemplateBuildEvent) => void; signal?: AbortSignal; runtimes?: RuntimeName[] },
): Promise<TemplateRecord> {
  assertCanBuildTemplates(core, options.runtimes);
  return (core.templateBuilder as NonNullable<Core['templateBuilder']>).build(spec, options);
}
