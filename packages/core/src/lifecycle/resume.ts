/**
 * Use-case: resume a paused sandbox (`paused → resuming → running`): attach its network again (same
 * slot), restore its pause image, reconnect its agent, re-seed its identity, restart its timeout clock.
 */
import type { Core } from '../context.js';
import type { SandboxRecord } from '../ports/store.js';
import { runOperation } from '../observe/operation.js';
import { withinQuota } from '../teams/quota.js';
import { withinBudget } from '../usage/budget-guard.js';
import { loadSandbox } from './records.js';
import { restorePaused } from './restore-paused.js';
import { alreadyIn } from './state-machine.js';

export interface ResumeInput {
  /** New lifetime from now; default the sandbox's current `timeoutMs`. */
  timeoutMs?: number;
}

/**
 * Resume the sandbox; when it is already running only `timeoutMs` (if given) is applied. A paused one
 * counts against its team's quota again: it must have room (auto-resume by the ingress or SSH too); and no
 * budget covering it may be exceeded (its tree was paused for it: raise the budget first).
 * @returns the record, now `running`.
 * @throws RamifyError `SANDBOX_NOT_FOUND`, `QUOTA_EXCEEDED`, `BUDGET_EXCEEDED` (it stays paused), `INVALID_STATE`, the restore's errors (the sandbox stays `paused`).
 */
export async function resumeSandbox(core: Core, sandboxId: string, input: ResumeInput = {}): Promise<SandboxRecord> {
  return runOperation(core, { name: 'resume', sandboxId }, () => core.locks.run(sandboxId, async () => {
    const record = await loadSandbox(core, sandboxId);
    if (alreadyIn(record.state, 'running')) {
      // Already running: only a new lifetime to apply, if one was given.
      return input.timeoutMs === undefined ? record : core.store.updateSandbox(sandboxId, { timeoutMs: input.timeoutMs, endAt: core.clock.now() + input.timeoutMs });
    }
    const timeoutMs = input.timeoutMs ?? record.timeoutMs;
    return withinBudget(core, sandboxId, [], () =>
      withinQuota(core, record.teamId, [{ id: record.id, memoryMB: record.memoryMB }], () =>
        restorePaused(core, record, { endAt: core.clock.now() + timeoutMs, timeoutMs, afterwards: 'operation-done' })));
  }));
}
