/**
 * Use-case: pause a running sandbox (`running → pausing → paused`): checkpoint memory, processes and files
 * into a `pause` snapshot, keep its network slot, stop its timeout clock. Pause never kills a sandbox:
 * when the checkpoint cannot be taken safely it fails with `CHECKPOINT_BLOCKED` and the sandbox keeps
 * running (see quiet-network.ts and checkpoint.ts).
 */
import type { Core } from '../context.js';
import type { SandboxRecord } from '../ports/store.js';
import { runOperation } from '../observe/operation.js';
import { checkpointRunning } from './checkpoint.js';
import { loadSandbox } from './records.js';
import { alreadyIn } from './state-machine.js';

/**
 * Pause the sandbox; a no-op when it is already paused.
 * @returns the record, now `paused`.
 * @throws RamifyError `SANDBOX_NOT_FOUND`, `INVALID_STATE`, `CHECKPOINT_BLOCKED` (still running), `AGENT_UNREACHABLE`, `RUNTIME_ERROR`.
 */
export async function pauseSandbox(core: Core, sandboxId: string): Promise<SandboxRecord> {
  return core.locks.run(sandboxId, async () => pauseLocked(core, await loadSandbox(core, sandboxId)));
}

/** {@link pauseSandbox} for a caller that already holds the sandbox's lock (the timeout scheduler, idle auto-pause); one `pause` operation. */
export async function pauseLocked(core: Core, record: SandboxRecord): Promise<SandboxRecord> {
  if (alreadyIn(record.state, 'paused')) return record;
  return runOperation(core, { name: 'pause', sandboxId: record.id }, async () => {
    const { record: paused } = await checkpointRunning(core, record, {
      kind: 'pause',
      operation: (snapshotId) => ({ kind: 'pause', snapshotId }),
      afterwards: 'operation-done',
    });
    return paused;
  });
}
