/**
 * Use-case: read a sandbox's egress log (allowed and denied connections, denied DNS names), newest first.
 * The entries come from the enforcement side; until it records them the log is empty.
 */
import type { EgressLogEntry } from '@ramify/contracts';
import type { Core } from '../core.js';
import { loadSandbox } from '../lifecycle/records.js';
import { assertNotKilled } from '../lifecycle/state-machine.js';

export interface EgressLogInput {
  /** At most this many entries (1-1000); default 100. */
  limit?: number;
}

/**
 * The newest entries of the egress log of `sandboxId`.
 * @throws RamifyError `SANDBOX_NOT_FOUND` (also when killed).
 */
export async function getEgressLog(core: Core, sandboxId: string, _input: EgressLogInput = {}): Promise<EgressLogEntry[]> {
  const record = await loadSandbox(core, sandboxId);
  assertNotKilled(sandboxId, record.state);
  // WIRING: read the enforcement side's verdicts here once it records them.
  return [];
}
