/**
 * A sandbox's agent reported a process killed because the sandbox ran out of memory (the agent's OOM
 * guard under gVisor, the guest kernel in a microVM). The sandbox keeps running: nothing transitions.
 * The kill is logged (warn), emitted on `core.events` (`onOom`) and written to the audit log as action
 * `sandbox.oom` (method `EVENT`, status 0: no API call), so `GET /v1/audit?sandboxId=` shows it.
 */
import type { AgentEvent } from '@ramify/contracts';
import { recordAudit } from '../access/audit.js';
import type { Core } from '../context.js';

/** The audit action of an OOM kill. */
export const OOM_AUDIT_ACTION = 'sandbox.oom';

/**
 * Record `event`, pushed by the agent of `sandboxId`. Events naming another sandbox are dropped: an agent
 * restored from an image delivers what was still queued in it, and a fork's copy is its parent's.
 * Never throws (a failed audit write is logged).
 */
export async function recordAgentEvent(core: Pick<Core, 'store' | 'logger' | 'events' | 'clock'>, sandboxId: string, event: AgentEvent): Promise<void> {
  if (event.type !== 'oom' || event.sandboxId !== sandboxId) return;
  const at = core.clock.now();
  const { type: _type, sandboxId: _id, at: _guestAt, ...kill } = event;
  core.logger.warn('process killed: the sandbox ran out of memory', { sandboxId, ...kill });
  core.events.emitOom({ sandboxId, at, ...kill });
  // The sandbox's team sees the entry in its audit log.
  const teamId = (await core.store.getSandbox(sandboxId).catch(() => null))?.teamId ?? null;
  const written = await recordAudit(core.store, {
    at,
    apiKeyId: null,
    teamId,
    method: 'EVENT',
    path: `/v1/sandboxes/${sandboxId}/processes/${event.pid}`,
    action: OOM_AUDIT_ACTION,
    sandboxId,
    status: 0,
    errorCode: 'COMMAND_OOM',
    tool: null,
  });
  if (!written) core.logger.error('audit write failed', { action: OOM_AUDIT_ACTION, sandboxId });
}
