/**
 * A running sandbox whose runtime instance stopped on its own (out of memory, crashed, killed from
 * outside): when the liveness monitor sees its processes gone (liveness.ts), or its agent channel drops
 * and cannot be reopened, ask the runtime; if the instance is not running, fail the calls waiting on
 * its agent, release what the sandbox held and record `error` with a reason the user can read. Never silent.
 */
import { runtimeFor, type Core } from '../context.js';
import { releaseResources } from './bring-up.js';
import { withCause } from '../observe/call-context.js';
import { transition } from './records.js';

/** Check the instance of `sandboxId` and end the sandbox in `error` if it is gone. Takes the sandbox's lock. */
export async function handleInstanceLost(core: Core, sandboxId: string): Promise<void> {
  await withCause('runtime', () => core.locks.run(sandboxId, async () => {
    const record = await core.store.getSandbox(sandboxId);
    if (!record || record.state !== 'running') return;
    const status = await runtimeFor(core, record.runtime)
      .status(sandboxId)
      .catch(() => ({ state: 'missing' as const, reason: undefined }));
    if (status.state === 'running') return;
    // Calls waiting on its agent channel fail now with SANDBOX_FAILED instead of timing out.
    await core.sessions.abandon(sandboxId);
    const why =
      status.reason === 'oom'
        ? `the sandbox ran out of memory (limit ${record.memoryMB} MB) and was stopped`
        : `the sandbox stopped unexpectedly (${status.reason ?? 'its runtime instance is gone'})`;
    core.logger.warn('sandbox instance lost', { sandboxId, reason: why });
    const failure = await releaseResources(core, record);
    await transition(core, record, 'error', { error: why, endAt: null, operation: null, slot: failure === null ? null : record.slot });
  }));
}
