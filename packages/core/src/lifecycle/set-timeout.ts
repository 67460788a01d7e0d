/**
 * Use-case: change a sandbox's lifetime. A running sandbox's deadline becomes now + `timeoutMs`; a paused
 * one keeps its clock stopped and gets the new lifetime when it resumes.
 */
import type { Core } from '../context.js';
import type { SandboxRecord } from '../ports/store.js';
import { loadSandbox } from './records.js';
import { assertTimeoutSettable, timeoutClockRuns } from './state-machine.js';

/**
 * @returns the updated record.
 * @throws RamifyError `SANDBOX_NOT_FOUND` (also when killed), `INVALID_STATE` during a transition or in `error`.
 */
export async function setSandboxTimeout(core: Core, sandboxId: string, timeoutMs: number): Promise<SandboxRecord> {
  return core.locks.run(sandboxId, async () => {
    const record = await loadSandbox(core, sandboxId);
    assertTimeoutSettable(sandboxId, record.state);
    const endAt = timeoutClockRuns(record.state) ? core.clock.now() + timeoutMs : null;
    return core.store.updateSandbox(sandboxId, { timeoutMs, endAt });
  });
}
