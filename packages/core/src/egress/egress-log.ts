/**
 * Use-case: read a sandbox's egress log (allowed and denied connections, DNS names answered or refused),
 * newest first. Enforcement records verdicts into `core.egressLog` (buffered); a read writes what is still
 * buffered first, so a verdict recorded before the call is in its answer.
 */
import type { EgressLogEntry } from '@ramify/contracts';
import type { Core } from '../context.js';
import { loadSandbox } from '../lifecycle/records.js';
import { assertNotKilled } from '../lifecycle/state-machine.js';
import type { EgressLogRecord } from '../ports/store.js';

export interface EgressLogInput {
  /** At most this many entries (1-1000); default 100. */
  limit?: number;
}

/** Default and largest page of {@link getEgressLog}. */
export const EGRESS_LOG_DEFAULT_LIMIT = 100;
export const EGRESS_LOG_MAX_LIMIT = 1000;

/**
 * The newest entries of the egress log of `sandboxId`, newest first (at most `limit`, clamped to 1-1000).
 * @throws RamifyError `SANDBOX_NOT_FOUND` (also when killed).
 */
export async function getEgressLog(core: Core, sandboxId: string, input: EgressLogInput = {}): Promise<EgressLogEntry[]> {
  const record = await loadSandbox(core, sandboxId);
  assertNotKilled(sandboxId, record.state);
  await core.egressLog.flush();
  const limit = Math.min(Math.max(Math.floor(input.limit ?? EGRESS_LOG_DEFAULT_LIMIT), 1), EGRESS_LOG_MAX_LIMIT);
  return (await core.store.listEgressLog(sandboxId, limit)).map(toEgressLogEntry);
}

/** The API shape of a stored entry (`at` as an ISO-8601 string; `peer` only when it is about another sandbox). */
export function toEgressLogEntry(r: EgressLogRecord): EgressLogEntry {
  return {
    at: new Date(r.at).toISOString(), protocol: r.protocol, destination: r.destination, port: r.port, name: r.name, verdict: r.verdict, rule: r.rule,
    ...(r.peer ? { peer: { sandboxId: r.peer.sandboxId, network: r.peer.network } } : {}),
    ...(r.error ? { error: r.error } : {}),
  };
}
