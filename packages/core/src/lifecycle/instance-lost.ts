/**
 * A running sandbox whose runtime instance stopped on its own (out of memory, crashed, killed from
 * outside): when the liveness monitor sees its processes gone (liveness.ts), or its agent channel drops
 * and cannot be reopened (agent sessions report `agentLost` on the bus), ask the runtime; if the instance
 * is not running, fail the calls waiting on its agent, release what the sandbox held, record `error` with
 * a reason the user can read and announce `instanceLost` (metrics count it). Never silent.
 */
import { runtimeFor, type Core } from '../context.js';
import type { RuntimeInstanceStatus } from '../ports/runtime.js';
import { releaseResources } from './bring-up.js';
import type { InstanceLossReason, SandboxInstanceLostEvent } from './events.js';
import { withCause } from '../observe/call-context.js';
import { messageOf, transition } from './records.js';

/**
 * Check the instance of `sandboxId` and end the sandbox in `error` if it is gone. Takes the sandbox's
 * lock; a sandbox that is not `running` (any more), or whose instance runs, is left alone.
 */
export async function handleInstanceLost(core: Core, sandboxId: string, noticedBy: SandboxInstanceLostEvent['noticedBy']): Promise<void> {
  await withCause('runtime', () => core.locks.run(sandboxId, async () => {
    const record = await core.store.getSandbox(sandboxId);
    if (!record || record.state !== 'running') return;
    const status: RuntimeInstanceStatus = await runtimeFor(core, record.runtime)
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
    const failed = await transition(core, record, 'error', { error: why, endAt: null, operation: null, slot: failure === null ? null : record.slot });
    core.events.emitInstanceLost({ sandboxId, sandbox: failed, reason: lossReason(status), noticedBy, at: core.clock.now() });
  }));
}

/** The runtime's verdict as a loss reason. */
function lossReason(status: RuntimeInstanceStatus): InstanceLossReason {
  if (status.reason === 'oom') return 'oom';
  return status.state === 'missing' ? 'missing' : 'exited';
}

/**
 * Subscribe the lifecycle to `agentLost` on `core.events`: a pooled sandbox (no row yet) is dropped from
 * the pool, any other is checked with {@link handleInstanceLost}. Returns the unsubscribe function.
 */
export function watchLostAgents(core: Core): () => void {
  return core.events.onAgentLost(({ sandboxId }) => {
    if (core.pool.runtimeOf(sandboxId) !== undefined) return core.pool.lost(sandboxId);
    handleInstanceLost(core, sandboxId, 'agent-channel').catch((err: unknown) =>
      core.logger.warn('checking a sandbox whose agent was lost failed', { sandboxId, error: messageOf(err) }));
  });
}
