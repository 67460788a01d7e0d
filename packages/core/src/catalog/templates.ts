/**
 * Use-cases: list, build and delete templates, and which templates a team sees (docs/design/TEAMS.md):
 * its own, plus the shared ones (the default team's). A team's own template of a shared one's name
 * shadows it for that team. Names are unique per team.
 */
import { RamifyError, notFound, type RuntimeName, type TemplateBuildEvent, type TemplateSpec } from '@ramify/contracts';
import { runtimeFor, type Core } from '../context.js';
import { DEFAULT_TEAM_ID } from '../access/actor.js';
import { collectSnapshots } from '../lifecycle/snapshot-gc.js';
import type { TemplateRecord } from '../ports/store.js';

/** Whether `teamId` may see (list, use) `template`: its own, or a shared one. */
export function templateVisibleTo(template: TemplateRecord, teamId: string): boolean {
  return template.teamId === teamId || template.teamId === DEFAULT_TEAM_ID;
}

/**
 * The template `nameOrId` as `teamId` sees it: by id when visible, else by name (the team's own first,
 * then the shared one); null otherwise.
 */
export async function findVisibleTemplate(core: Pick<Core, 'store'>, nameOrId: string, teamId: string): Promise<TemplateRecord | null> {
  const byId = await core.store.getTemplate(nameOrId);
  if (byId && templateVisibleTo(byId, teamId)) return byId;
  return (await core.store.findTemplateByName(nameOrId, teamId)) ?? (teamId === DEFAULT_TEAM_ID ? null : await core.store.findTemplateByName(nameOrId, DEFAULT_TEAM_ID));
}

/** The templates `teamId` (default the default team) sees, by name: its own and the shared ones. */
export async function listTemplates(core: Core, teamId: string = DEFAULT_TEAM_ID): Promise<TemplateRecord[]> {
  return (await core.store.listTemplates()).filter((t) => templateVisibleTo(t, teamId));
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
 * Build (or reuse) a template of `options.teamId` (default the default team: a shared template),
 * reporting progress to `onEvent`. Images of the previous build that the new one replaced are deleted
 * once no live sandbox was made from them.
 * @throws RamifyError `RUNTIME_UNAVAILABLE` when no builder is wired, and the builder's errors.
 */
export async function buildTemplate(
  core: Core,
  spec: TemplateSpec,
  options: { onEvent: (event: TemplateBuildEvent) => void; signal?: AbortSignal; runtimes?: RuntimeName[]; teamId?: string },
): Promise<TemplateRecord> {
  assertCanBuildTemplates(core, options.runtimes);
  const teamId = options.teamId ?? DEFAULT_TEAM_ID;
  const before = await core.store.findTemplateByName(spec.name, teamId);
  const built = await (core.templateBuilder as NonNullable<Core['templateBuilder']>).build(spec, { ...options, teamId });
  // Images the rebuild replaced go once no live sandbox was made from them.
  const kept = new Set(built.images.map((i) => i.snapshotId));
  await core.pool.drain(); // Pooled sandboxes of the replaced images go first.
  await collectSnapshots(core, (before?.images ?? []).map((i) => i.snapshotId).filter((id) => !kept.has(id)));
  return built;
}

/**
 * Delete one of `teamId`'s templates (by id or name; default the default team's) and its booted-and-idle images, files and rows.
 * A shared template seen by another team is refused (`FORBIDDEN`): only the default team deletes it. Sandboxes and
 * snapshots made from it are independent of it afterwards only when none is alive: the delete is refused
 * while a running or paused sandbox was created from one of its images, or another template names it as
 * its parent (rebuilding that one needs it). The template's root filesystem stays in the build cache
 * (shared, keyed by content; named snapshots and sandboxes pin it). The row goes first: an interrupted
 * delete leaves unreferenced image files, never a template whose images are gone.
 * @throws RamifyError `TEMPLATE_NOT_FOUND`; `CONFLICT` naming what still needs it.
 */
export async function deleteTemplate(core: Core, nameOrId: string, teamId: string = DEFAULT_TEAM_ID): Promise<void> {
  const template = await findVisibleTemplate(core, nameOrId, teamId);
  if (!template) throw notFound('TEMPLATE_NOT_FOUND', 'template', nameOrId, { id: nameOrId });
  if (template.teamId !== teamId) {
    throw new RamifyError('FORBIDDEN', `template '${template.name}' is shared (the '${DEFAULT_TEAM_ID}' team's): only that team's keys delete it`, { id: template.id });
  }
  const imageIds = [...new Set([template.snapshotId, ...template.images.map((i) => i.snapshotId)])];
  const children: string[] = [];
  for (const other of await core.store.listTemplates()) {
    // A child names its parent by name, resolved in its own team first, then among the shared templates.
    const resolvesHere = other.teamId === template.teamId || (template.teamId === DEFAULT_TEAM_ID && !(await core.store.findTemplateByName(template.name, other.teamId)));
    if (other.id !== template.id && other.parent === template.name && resolvesHere) children.push(`template ${other.name} (built from it)`);
  }
  const sandboxes = new Set<string>();
  for (const id of imageIds) {
    const refs = await core.store.snapshotReferences(id);
    for (const sandboxId of [...refs.sourceOf, ...refs.pausedBy]) sandboxes.add(`sandbox ${sandboxId}`);
  }
  const needed = [...children, ...sandboxes];
  if (needed.length > 0) {
    throw new RamifyError('CONFLICT', `template '${template.name}' is still needed by ${needed.join(', ')}; ${whatToDoFirst(sandboxes.size, children.length)}`, { id: template.id, neededBy: needed });
  }
  await core.store.deleteTemplate(template.id);
  await core.pool.drain(); // Its pooled sandboxes go before its images.
  // Nothing lists or uses them now: collected like images a rebuild replaced.
  await collectSnapshots(core, imageIds);
}

/** `kill that sandbox first`, `delete those templates first`, or both: only what applies. */
function whatToDoFirst(sandboxCount: number, templateCount: number): string {
  const steps: string[] = [];
  if (sandboxCount > 0) steps.push(`kill ${sandboxCount === 1 ? 'that sandbox' : 'those sandboxes'}`);
  if (templateCount > 0) steps.push(`delete ${templateCount === 1 ? 'that template' : 'those templates'}`);
  return `${steps.join(' and ')} first`;
}
