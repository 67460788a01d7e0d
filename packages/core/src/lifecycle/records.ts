/**
 * Record helpers shared by the use-cases: load-or-404, the one way to change a sandbox's state
 * (check → persist → emit), and the mapping of records to API shapes.
 */
import { RamifyError, isRamifyError, notFound, type IngressEndpoint, type SandboxInfo, type SandboxState, type SnapshotInfo, type TemplateInfo } from '@ramify/contracts';
import type { Core } from '../context.js';
import type { SandboxPatch, SandboxRecord, SnapshotRecord, TemplateRecord } from '../ports/store.js';
import { effectiveAutoResume, sortPorts } from '../ingress/ports.js';
import { assertTransition } from './state-machine.js';

/**
 * The sandbox's record.
 * @throws RamifyError `SANDBOX_NOT_FOUND`.
 */
export async function loadSandbox(core: Pick<Core, 'store'>, sandboxId: string): Promise<SandboxRecord> {
  const record = await core.store.getSandbox(sandboxId);
  if (!record) throw notFound('SANDBOX_NOT_FOUND', 'sandbox', sandboxId, { id: sandboxId });
  return record;
}

/**
 * Move `record` to `to` (checked against the transition table), persist it together with `patch`, then
 * emit the event. Returns the persisted record. When the state's meter class changes the meter writes the
 * time spent in the old one first (and a new instance gets its first counter reading when it starts running).
 * @throws RamifyError `INVALID_STATE` for an illegal transition (nothing is written then).
 */
export async function transition(core: Pick<Core, 'store' | 'events' | 'clock' | 'meter'>, record: SandboxRecord, to: SandboxState, patch: SandboxPatch = {}): Promise<SandboxRecord> {
  assertTransition(record.id, record.state, to);
  // The meter closes the old state's time first (usage/meter.ts): a crash in between leaves both consistent.
  await core.meter.beforeTransition(record, to);
  // A start or resume is use (idle auto-pause): its time is stored with the state, so a restart right after it keeps it.
  const updated = await core.store.updateSandbox(record.id, { ...patch, state: to, ...(to === 'running' ? { lastActiveAt: core.clock.now() } : {}) });
  core.events.emitState({ sandboxId: record.id, from: record.state, to, sandbox: updated, at: core.clock.now() });
  return updated;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/** The API shape of a sandbox; `ingress` is where this daemon's port URLs point (`core.options.ingress`), null without ingress. */
export function toSandboxInfo(record: SandboxRecord, ingress: IngressEndpoint | null = null): SandboxInfo {
  return {
    id: record.id,
    state: record.state,
    runtime: record.runtime,
    templateId: record.templateId,
    sourceSnapshotId: record.sourceSnapshotId,
    parentId: record.parentId,
    cpuCount: record.cpuCount,
    memoryMB: record.memoryMB,
    diskSizeMB: record.diskSizeMB,
    metadata: record.metadata,
    createdAt: iso(record.createdAt),
    endAt: record.endAt === null ? null : iso(record.endAt),
    timeoutMs: record.timeoutMs,
    onTimeout: record.onTimeout,
    error: record.error,
    ports: sortPorts(record.ingress.ports),
    autoResume: effectiveAutoResume(record.ingress),
    ingress: ingress === null ? null : { ...ingress },
    autoPause: record.autoPause === null ? null : { ...record.autoPause },
    team: record.teamId,
  };
}

/** The API shape of a snapshot. */
export function toSnapshotInfo(record: SnapshotRecord): SnapshotInfo {
  return {
    id: record.id,
    name: record.name,
    kind: record.kind,
    runtime: record.runtime,
    templateId: record.templateId,
    sandboxId: record.sandboxId,
    parentSnapshotId: record.parentSnapshotId,
    sizeBytes: record.sizeBytes,
    createdAt: iso(record.createdAt),
    egress: record.egress === null ? null : { mode: record.egress.mode, rules: [...record.egress.rules] },
    ingress: record.ingress ? { ports: sortPorts(record.ingress.ports), autoResume: record.ingress.autoResume } : null,
    autoPause: record.autoPause ? { ...record.autoPause } : null,
    team: record.teamId,
    networks: record.networks ? record.networks.map((n) => ({ network: n.network, alias: n.alias })) : null,
  };
}

/** The API shape of a template. */
export function toTemplateInfo(record: TemplateRecord): TemplateInfo {
  return {
    id: record.id,
    name: record.name,
    runtime: record.runtime,
    specHash: record.specHash,
    snapshotId: record.snapshotId,
    images: record.images.map((i) => ({ runtime: i.runtime, snapshotId: i.snapshotId })),
    parent: record.parent,
    envs: { ...record.envs },
    sizeBytes: record.sizeBytes,
    createdAt: iso(record.createdAt),
    team: record.teamId,
  };
}

/** A short human-readable message of any thrown value. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** `err` as a RamifyError, wrapping foreign errors as `code` with `context` prefixed. */
export function asRamifyError(err: unknown, code: 'RUNTIME_ERROR' | 'INTERNAL', context: string): RamifyError {
  if (isRamifyError(err)) return err;
  return new RamifyError(code, `${context}: ${messageOf(err)}`);
}
