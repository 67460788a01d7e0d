/**
 * The quiet-network rule: a runtime with `checkpointNeedsQuietNetwork` kills the sandbox when asked to
 * checkpoint while a non-loopback TCP endpoint is connected (gVisor, see RUNTIME-GVISOR.md). So before
 * every checkpoint core asks the agent for such endpoints and waits, within a bound, for them to drain;
 * if they do not, the checkpoint is refused and the sandbox keeps running. Pause never kills a sandbox.
 */
import { RamifyError } from '@ramify/contracts';
import type { Core } from '../core.js';
import type { Runtime } from '../ports/runtime.js';

/**
 * Resolve once the sandbox has no connected non-loopback TCP endpoint (at once when the runtime does not
 * need a quiet network).
 * @throws RamifyError `CHECKPOINT_BLOCKED` (409) listing the endpoints still connected after
 *   `core.options.quietNetworkTimeoutMs`; `AGENT_UNREACHABLE` when the agent cannot be asked.
 */
export async function waitForQuietNetwork(core: Pick<Core, 'sessions' | 'clock' | 'options'>, sandboxId: string, runtime: Runtime): Promise<void> {
  if (!runtime.capabilities.checkpointNeedsQuietNetwork) return;
  const { quietNetworkTimeoutMs, quietNetworkPollMs } = core.options;
  const deadline = core.clock.now() + quietNetworkTimeoutMs;
  for (;;) {
    const session = await core.sessions.get(sandboxId);
    const { endpoints } = await session.networkEndpoints();
    if (endpoints.length === 0) return;
    if (core.clock.now() >= deadline) {
      throw new RamifyError(
        'CHECKPOINT_BLOCKED',
        `sandbox '${sandboxId}' cannot be checkpointed while TCP connections are open (still open after ${quietNetworkTimeoutMs} ms): ${endpoints.join(', ')}; close them and retry (the sandbox keeps running)`,
        { id: sandboxId, endpoints },
      );
    }
    await core.clock.sleep(Math.min(quietNetworkPollMs, Math.max(0, deadline - core.clock.now())));
  }
}
