/**
 * Where a crash case SIGKILLs the daemon during a pause or a fork. Each point is observed from outside
 * (the API's state, or the runtime's processes on the host), never guessed with a sleep; if a point is
 * not seen within a bound (the operation was faster than the polling), the daemon is killed anyway and
 * the case still checks that whatever happened is consistent.
 */
import type { SandboxInfo } from '@ramify/contracts';
import type { SuiteContext } from '../context.js';
import { hostRun } from '../host-cleanup.js';
import { microvmInstanceIds, readMicrovmInstance } from '../qemu-processes.js';
import { waitFor } from '../support.js';

/** A moment inside an operation on `sandboxId`. */
export interface CrashPoint {
  name: string;
  /** True once the moment is reached. */
  reached(ctx: SuiteContext, sandboxId: string): Promise<boolean>;
}

/** The API reports the sandbox left `running` (the operation is persisted, the runtime not yet acting). */
export const STATE_LEFT_RUNNING: CrashPoint = {
  name: 'state left running',
  reached: async (ctx, sandboxId) => {
    const res = await ctx.daemon().call('GET', `/v1/sandboxes/${sandboxId}`);
    const state = (res.body as SandboxInfo | null)?.state;
    return state !== undefined && state !== 'running';
  },
};

/** `runsc` processes of this daemon running `verb` (`checkpoint`, `restore`), as argv strings. */
async function runscProcesses(ctx: SuiteContext, verb: string): Promise<string[]> {
  const { stdout } = await hostRun(['ps', '-eo', 'args=']);
  const stateDir = `${ctx.daemon().dataDir}/runtime/gvisor/state`;
  return stdout.split('\n').filter((args) => /(^|\/)runsc\s/.test(args) && args.includes(stateDir) && args.includes(` ${verb} `));
}

/**
 * The runtime's checkpoint of the sandbox is running. gVisor: a `runsc checkpoint` process; microVM:
 * the instance carries the runtime's checkpoint marker (QEMU is saving state or a loader is copying RAM).
 */
export const RUNTIME_CHECKPOINT: CrashPoint = {
  name: 'runtime checkpoint in flight',
  reached: async (ctx, sandboxId) => {
    if (ctx.target.runtime === 'microvm') return (await readMicrovmInstance(ctx.daemon().dataDir, sandboxId))?.checkpoint !== undefined;
    return (await runscProcesses(ctx, 'checkpoint')).some((args) => args.includes(sandboxId));
  },
};

/**
 * A fork's children are being restored. gVisor: a `runsc restore` of a sandbox other than the parent;
 * microVM: an instance other than the parent's that is not ready yet (its QEMU is loading the image).
 */
export const CHILDREN_RESTORING: CrashPoint = {
  name: 'children restoring',
  reached: async (ctx, parentId) => {
    if (ctx.target.runtime === 'microvm') {
      const dataDir = ctx.daemon().dataDir;
      for (const id of microvmInstanceIds(dataDir).filter((i) => i !== parentId)) {
        if ((await readMicrovmInstance(dataDir, id))?.ready === false) return true;
      }
      return false;
    }
    return (await runscProcesses(ctx, 'restore')).some((args) => !args.includes(parentId));
  },
};

/**
 * Wait (bounded) for `point` on `sandboxId`, then SIGKILL the daemon. Resolves with what was observed,
 * for the case's diagnostics.
 */
export async function crashAt(ctx: SuiteContext, point: CrashPoint, sandboxId: string): Promise<string> {
  const seen = await waitFor(() => point.reached(ctx, sandboxId), { timeoutMs: 30_000, intervalMs: 5, what: point.name })
    .then(() => `killed at: ${point.name}`, () => `${point.name} not observed; killed afterwards`);
  await ctx.daemon().crash();
  return seen;
}
