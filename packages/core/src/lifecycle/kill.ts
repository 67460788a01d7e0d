/**
 * Use-case: kill a sandbox (any state but `killed` → `killing` → `killed`): close its agent channel, stop
 * its runtime instance, detach its network, free its slot, and drop the images only it needed.
 * Idempotent on a killed sandbox.
 */
import type { Core } from '../context.js';
import type { SandboxRecord } from '../ports/store.js';
import { runOperation } from '../observe/operation.js';
import { releaseResources } from './bring-up.js';
import { collectSnapshots } from './snapshot-gc.js';
import { loadSandbox, transition } from './records.js';
import { isTerminal } from './state-machine.js';

/**
 * Kill the sandbox; waits for any operation in progress on it to finish first.
 * @returns the record, now `killed` (or `error` if its resources could not be released; killing again retries).
 * @throws RamifyError `SANDBOX_NOT_FOUND`.
 */
export async function killSandbox(core: Core, sandboxId: string): Promise<SandboxRecord> {
  return runOperation(core, { name: 'kill', sandboxId }, () => core.locks.run(sandboxId, async () => {
    const record = await loadSandbox(core, sandboxId);
    if (isTerminal(record.state)) return record;
    return finishKill(core, await transition(core, record, 'killing', { operation: { kind: 'kill' } }));
  }));
}

/** Second half of a kill, from `killing` (also used by reconcile to roll a crashed kill forward). */
export async function finishKill(core: Core, killing: SandboxRecord): Promise<SandboxRecord> {
  const failure = await releaseResources(core, killing);
  if (failure !== null) {
    return transition(core, killing, 'error', { operation: null, endAt: null, error: `kill failed: ${failure}` });
  }
  const killed = await transition(core, killing, 'killed', { operation: null, endAt: null, slot: null, pausedSnapshotId: null });
  await collectSnapshots(core, [killing.pausedSnapshotId, killing.sourceSnapshotId]);
  return killed;
}
