/**
 * Use-case: create a sandbox from a template (its booted-and-idle image) or from a snapshot (memory,
 * processes and files). Creating is a restore, never a boot.
 */
import { RamifyError, invalidField, notFound, quote, type AutoPause, type CreateSandboxRequest, type RuntimeName } from '@ramify/contracts';
import { runtimeFor, type Core } from '../context.js';
import { DEFAULT_TEAM_ID } from '../access/actor.js';
import { findVisibleSnapshot } from '../catalog/snapshots.js';
import { findVisibleTemplate } from '../catalog/templates.js';
import { withinQuota } from '../teams/quota.js';
import { assertSnapshotWithinBudget } from '../usage/budget-guard.js';
import { normaliseEgressPolicy, type CanonicalEgressPolicy } from '../egress/policy.js';
import { newSandboxId } from '../ids.js';
import { currentCallContext } from '../observe/call-context.js';
import { phaseTimer, runOperation } from '../observe/operation.js';
import { checkAutoPause } from '../idle/set-auto-pause.js';
import { copyIngress, parsePortSpecs } from '../ingress/ports.js';
import { planNetworkJoins } from '../networks/joins.js';
import type { RuntimeCapabilities } from '../ports/runtime.js';
import type { SandboxIngress, SandboxRecord, SnapshotRecord, TemplateRecord } from '../ports/store.js';
import { startSandbox } from './start.js';

/**
 * Create and start a sandbox; resolves once it is `running`. From a template with the default resources
 * it claims a sandbox of the warm pool when one is idle (docs/design/POOL.md): the same result, sooner.
 * Its environment is fixed here and stored as its `envs` (every start, resume and fork applies them):
 * the template's `envs` (from a snapshot: the envs its sandbox had when it was taken; for a snapshot that
 * did not record them, a template image or one taken before schema migration 8, the envs of its template,
 * none if that was deleted), overridden per key by the request's `envs`.
 * Its egress policy is the request's `egress` (rules or `{ mode, rules }`, validated before anything else
 * happens), else from a snapshot the policy the snapshot recorded (a template image, or an old snapshot
 * that recorded none: open, and a warning is logged for the latter). It is stored before the slot is
 * attached and enforced while the image is restored (a slot without a policy drops every packet), so the
 * restored processes' first packet meets it or nothing.
 * Its exposed ports are the request's `ports` (validated first too), else from a snapshot the ones it
 * recorded; it gets an access token of its own. Its idle auto-pause is the request's `autoPause` (null: off),
 * else a snapshot's recorded one, else off. Its private networks are the request's `networks` only (a snapshot's
 * recorded ones are not joined), checked before anything starts and enforced with its egress policy.
 * Its `budget` (limits of it and its forks) is stored with it before it runs; a create from a snapshot of
 * a sandbox whose fork tree is over its budget is refused.
 * It belongs to `owner.teamId` (default the default team): templates and snapshots are looked up as that
 * team sees them (its own, and the shared templates), and its quota must have room (checked before
 * anything is made).
 * @throws RamifyError `QUOTA_EXCEEDED`, `BUDGET_EXCEEDED` (nothing made), `NETWORK_NOT_FOUND`, `NETWORK_ALIAS_TAKEN`, `VALIDATION_FAILED` (a bad egress rule, a bad alias, named, or mode; a bad or repeated port; both template and snapshot; a runtime
 *   that does not match the snapshot; a `diskSizeMB` or `memoryMB` the runtime or its image cannot give), `TEMPLATE_NOT_FOUND`, `TEMPLATE_NOT_BUILT` (the template has no image
 *   for the runtime asked for), `SNAPSHOT_NOT_FOUND`, `CONFLICT` (snapshot still being written),
 *   `RUNTIME_UNAVAILABLE`, and the restore's errors (`RUNTIME_ERROR`, `AGENT_UNREACHABLE`; the sandbox is then `error`).
 */
export async function createSandbox(core: Core, request: CreateSandboxRequest, owner: { teamId?: string } = {}): Promise<SandboxRecord> {
  return runOperation(core, { name: 'create' }, () => createUnder(core, request, owner));
}

/** {@link createSandbox} inside its operation. */
async function createUnder(core: Core, request: CreateSandboxRequest, owner: { teamId?: string }): Promise<SandboxRecord> {
  const teamId = owner.teamId ?? DEFAULT_TEAM_ID;
  const { mark: phase, within, phases } = phaseTimer();
  const egress = request.egress === undefined ? undefined : normaliseEgressPolicy(request.egress, 'body.egress');
  const ports = request.ports === undefined ? undefined : parsePortSpecs(request.ports);
  const askedAutoPause = request.autoPause === undefined ? undefined : checkAutoPause(request.autoPause);
  if (request.template !== undefined && request.snapshot !== undefined) {
    throw invalidField('body', 'template and snapshot are mutually exclusive: give one', { fields: ['template', 'snapshot'] });
  }
  const source =
    request.snapshot !== undefined
      ? await fromSnapshot(core, request.snapshot, teamId)
      : await fromTemplate(core, request.template ?? core.options.defaultTemplate, request.runtime, teamId);
  await assertSnapshotWithinBudget(core, source.sandboxId ?? null);
  if (request.runtime !== undefined && request.runtime !== source.runtime) {
    throw invalidField('body.runtime', `must be the image's runtime, ${source.runtime}, got ${quote(request.runtime)}`, { field: 'runtime' });
  }
  const runtime = runtimeFor(core, source.runtime);
  const diskSizeMB = resolveDiskSize(runtime.name, runtime.capabilities.rootDisk, request.diskSizeMB, source.diskSizeMB);
  const cpuCount = request.cpuCount ?? source.cpuCount ?? core.options.defaultCpuCount;
  const memoryMB = request.memoryMB ?? source.memoryMB ?? core.options.defaultMemoryMB;
  if (runtime.checkResources) await runtime.checkResources({ cpuCount, memoryMB, diskSizeMB }, (await core.storage.open(source.snapshotId)).imageDir);
  // From a template with the default resources: claim a restored idle sandbox when the pool has one.
  const pooled = request.snapshot === undefined
    ? await core.pool.take({ templateId: source.templateId, runtime: source.runtime, snapshotId: source.snapshotId, rootfsDir: source.rootfsDir, cpuCount, memoryMB, diskSizeMB })
    : null;
  const id = pooled?.id ?? newSandboxId();
  phase('resolveMs');
  currentCallContext().operation?.set({ 'ramify.sandbox_id': id, 'ramify.runtime': runtime.name, 'ramify.pool': pooled ? 'hit' : 'miss' });
  try {
    const networks = await planNetworkJoins(core, id, teamId, request.networks);
    if (egress === undefined && source.egress === null) {
      core.logger.warn('the snapshot recorded no egress policy (taken before policies were recorded, its sandbox gone): the sandbox starts open', { snapshotId: source.snapshotId, sandboxId: id });
    }
    phase('networksMs');
    // `start` holds the sandbox's own phases (store, bringUp and its network, egress, restore, agent, ...).
    const started = await within('startMs', () => withinQuota(core, teamId, [{ id, memoryMB }], () => core.locks.run(id, () =>
      startSandbox(core, {
        id,
        teamId,
        runtime: source.runtime,
        templateId: source.templateId,
        sourceSnapshotId: source.snapshotId,
        rootfsDir: source.rootfsDir,
        parentId: null,
        cpuCount,
        memoryMB,
        diskSizeMB,
        metadata: request.metadata ?? {},
        envs: sandboxEnvs(source.baseEnvs, request.envs),
        timeoutMs: request.timeoutMs ?? core.options.defaultTimeoutMs,
        onTimeout: request.onTimeout ?? core.options.defaultOnTimeout,
        autoPause: askedAutoPause !== undefined ? askedAutoPause : source.autoPause ? { ...source.autoPause } : null,
        egress: egress ?? source.egress ?? undefined,
        ingress: sandboxIngress(source.ingress, ports, request.autoResume),
        networks,
        budget: request.budget,
      }, pooled),
    )));
    core.logger.debug('sandbox created', { sandboxId: id, pool: pooled ? 'hit' : 'miss', ...phases });
    return started;
  } catch (err) {
    // Refused before the pooled sandbox became this one (quota, a network alias): it goes back idle.
    if (pooled) core.pool.giveBack(pooled);
    throw err;
  }
}

/**
 * A new sandbox's ports and autoResume: the request's ports, else the ones its snapshot recorded (none from a
 * template); the request's autoResume, else the snapshot's (when the request gives no ports), else the default.
 */
function sandboxIngress(recorded: SandboxIngress | null | undefined, ports: SandboxIngress['ports'] | undefined, autoResume: boolean | undefined): SandboxIngress {
  const base = recorded ? copyIngress(recorded) : { ports: [], autoResume: null };
  if (ports !== undefined) return { ports, autoResume: autoResume ?? null };
  return { ports: base.ports, autoResume: autoResume ?? base.autoResume };
}

interface Source {
  runtime: SandboxRecord['runtime'];
  templateId: string;
  snapshotId: string;
  /** The root filesystem the source image was made on: the sandbox is pinned to it. */
  rootfsDir: string;
  /**
   * The environment the source gives before the request's: the template's `envs`; a snapshot's recorded
   * envs, or its template's when it has none recorded (`{}` when the template is gone).
   */
  baseEnvs: Record<string, string>;
  cpuCount?: number;
  memoryMB?: number;
  /** The source image's disk size, MiB (null or absent: the runtime's default). */
  diskSizeMB?: number | null;
  /**
   * The egress policy the source recorded (a snapshot's). Absent: a template image (open unless the request
   * gives one); null: a snapshot that recorded none (taken before policies were recorded, its sandbox gone: open too).
   */
  egress?: CanonicalEgressPolicy | null;
  /** The exposed ports and autoResume a snapshot recorded; absent or null: none. */
  ingress?: SandboxIngress | null;
  /** The idle auto-pause a snapshot recorded; absent or null: off. */
  autoPause?: AutoPause | null;
  /** The sandbox a snapshot was taken of (null for template images); absent: from a template. */
  sandboxId?: string | null;
}

/**
 * The root disk size of a new sandbox, MiB: the one asked for, else the source image's, else the
 * runtime's default; null for a runtime without a disk of its own.
 * @throws RamifyError VALIDATION_FAILED (field `diskSizeMB`) when the runtime has no disk of its own, or
 *   the size is below the image's disk (disks grow, never shrink) or above the runtime's most.
 */
function resolveDiskSize(runtime: RuntimeName, rootDisk: RuntimeCapabilities['rootDisk'], asked: number | undefined, image: number | null | undefined): number | null {
  if (!rootDisk) {
    if (asked === undefined) return null;
    throw invalidField(
      'body.diskSizeMB',
      `the ${runtime} runtime has no disk of its own (file changes live in the sandbox's memory, within memoryMB); use runtime 'microvm' for a sized disk`,
      { field: 'diskSizeMB', runtime },
    );
  }
  const least = image ?? rootDisk.defaultSizeMB;
  const size = asked ?? least;
  if (size < least) {
    throw invalidField('body.diskSizeMB', `must be at least the image's disk of ${least} MiB (a disk can grow, not shrink), got ${size}`, { field: 'diskSizeMB', leastMB: least });
  }
  if (size > rootDisk.maxSizeMB) {
    throw invalidField('body.diskSizeMB', `must be at most the ${runtime} runtime's most, ${rootDisk.maxSizeMB} MiB, got ${size}`, { field: 'diskSizeMB', mostMB: rootDisk.maxSizeMB });
  }
  return size;
}

/**
 * The template's image for `runtime`; without one, the image of this daemon's default runtime when the
 * template has it, else the template's default image.
 */
async function fromTemplate(core: Core, nameOrId: string, runtime: RuntimeName | undefined, teamId: string): Promise<Source> {
  const template: TemplateRecord | null = await findVisibleTemplate(core, nameOrId, teamId);
  if (!template) throw notFound('TEMPLATE_NOT_FOUND', 'template', nameOrId, { id: nameOrId });
  const images = template.images.length > 0 ? template.images : [{ runtime: template.runtime, snapshotId: template.snapshotId }];
  const wanted = runtime ?? core.runtimes[0]?.name;
  const image = images.find((i) => i.runtime === wanted) ?? (runtime === undefined ? images[0] : undefined);
  if (!image) {
    runtimeFor(core, runtime);
    const built = images.map((i) => i.runtime).join(', ');
    throw new RamifyError(
      'TEMPLATE_NOT_BUILT',
      `template '${template.name}' has no ${runtime} image (built for: ${built}); build it again with \`ramify template build <its spec file> --runtime ${runtime}\`` +
        (template.name === 'base' ? ` (for the built-in base: \`ramify template build base --runtime ${runtime}\`)` : ''),
      { template: template.name, runtime, built: images.map((i) => i.runtime) },
    );
  }
  // The template's images and the rootfs they were made on come from the same record.
  return { runtime: image.runtime, templateId: template.id, snapshotId: image.snapshotId, rootfsDir: template.rootfsDir, baseEnvs: template.envs };
}

async function fromSnapshot(core: Core, idOrName: string, teamId: string): Promise<Source> {
  const snapshot: SnapshotRecord | null = await findVisibleSnapshot(core, idOrName, teamId);
  if (!snapshot) throw notFound('SNAPSHOT_NOT_FOUND', 'snapshot', idOrName, { id: idOrName });
  if (snapshot.status !== 'ready') throw new RamifyError('CONFLICT', `snapshot '${idOrName}' is still being written; retry in a moment`, { id: snapshot.id });
  return {
    runtime: snapshot.runtime,
    templateId: snapshot.templateId,
    snapshotId: snapshot.id,
    rootfsDir: snapshot.rootfsDir,
    baseEnvs: snapshot.envs ?? (await core.store.getTemplate(snapshot.templateId))?.envs ?? {},
    cpuCount: snapshot.cpuCount,
    memoryMB: snapshot.memoryMB,
    diskSizeMB: snapshot.diskSizeMB,
    egress: snapshot.egress === null ? (snapshot.kind === 'template' ? undefined : null) : { mode: snapshot.egress.mode, rules: [...snapshot.egress.rules] },
    ingress: snapshot.ingress ?? null,
    autoPause: snapshot.autoPause ?? null,
    sandboxId: snapshot.sandboxId,
  };
}

/**
 * A new sandbox's environment: its source's envs (the template's, or the snapshot's) with the create
 * request's placed over them (the same name: the request's value wins). Neither input is modified.
 */
function sandboxEnvs(baseEnvs: Record<string, string>, requestEnvs: Record<string, string> | undefined): Record<string, string> {
  return { ...baseEnvs, ...(requestEnvs ?? {}) };
}
