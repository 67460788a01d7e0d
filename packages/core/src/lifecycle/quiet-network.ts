/**
 * The quiet-network rule: a runtime with `checkpointNeedsQuietNetwork` kills the sandbox when asked to
 * checkpoint while a non-loopback TCP endpoint is connected (gVisor, see RUNTIME-GVISOR.md). So before
 * every checkpoint core asks the agent to quiesce: once no such endpoint is connected, the agent stops
 * every other process (so none can connect between this check and the checkpoint) and checks again.
 * Core polls, within a bound, until that succeeds; if it does not, the checkpoint is refused and the
 * sandbox keeps running. Pause never kills a sandbox. The stopped processes continue at the agent's next
 * host connection: after the restore, or after a checkpoint that failed.
 */
import { isRamifyError, RamifyError, type AgentSession } from '@ramify/contracts';
import type { Core } from '../core.js';
import type { Runtime } from '../ports/runtime.js';

/**
 * Resolve once the sandbox has no connected non-loopback TCP endpoint, none it closed first is still
 * lingering (host-side, `EgressEnforcer.closingConnectionsMs`), and its processes are stopped for the
 * checkpoint. At once when the runtime does not need a quiet network.
 * @throws RamifyError `CHECKPOINT_BLOCKED` (409) listing the endpoints still connected after
 *   `quietNetworkTimeoutMs`, or, with `retryAfterMs`, when connections it closed linger longer than
 *   `closingConnectionsWaitMs`; `AGENT_UNREACHABLE` when the agent cannot be asked. The sandbox runs on.
 */
export async function waitForQuietNetwork(core: Pick<Core, 'sessions' | 'clock' | 'options' | 'egressEnforcer'>, sandboxId: string, runtime: Runtime, slot: number | null): Promise<void> {
  if (!runtime.capabilities.checkpointNeedsQuietNetwork) return;
  const { quietNetworkTimeoutMs, quietNetworkPollMs } = core.options;
  const deadline = core.clock.now() + quietNetworkTimeoutMs;
  const waitOutCloses = lingeringCloses(core, sandboxId, slot);
  for (;;) {
    await waitOutCloses();
    const session = await core.sessions.get(sandboxId);
    const { frozen, endpoints } = await quiesce(session);
    if (frozen) {
      try {
        await waitOutCloses(); // A close just before the freeze: nothing can close now, wait it out.
      } catch (err) {
        // Continue what the agent stopped: it does so at its next host connection.
        await core.sessions.open(sandboxId).catch(() => undefined);
        throw err;
      }
      return;
    }
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

/**
 * Waiting for the TCP connections the sandbox closed first to end (see `closingConnectionsMs`), within
 * `closingConnectionsWaitMs` from the start of the checkpoint. Without an enforcer or a slot, nothing to wait for.
 */
function lingeringCloses(core: Pick<Core, 'clock' | 'options' | 'egressEnforcer'>, sandboxId: string, slot: number | null): () => Promise<void> {
  const enforcer = core.egressEnforcer;
  const bound = core.clock.now() + core.options.closingConnectionsWaitMs;
  return async () => {
    if (!enforcer?.closingConnectionsMs || slot === null) return;
    for (let leftMs = await enforcer.closingConnectionsMs(slot); leftMs > 0; leftMs = await enforcer.closingConnectionsMs(slot)) {
      if (core.clock.now() + leftMs > bound) {
        throw new RamifyError(
          'CHECKPOINT_BLOCKED',
          `sandbox '${sandboxId}' cannot be checkpointed for about ${Math.ceil(leftMs / 1000)} s more: TCP connections it closed are still in TIME_WAIT (gVisor cannot checkpoint them; they end within 65 s of the close); retry then (the sandbox keeps running)`,
          { id: sandboxId, retryAfterMs: leftMs },
        );
      }
      await core.clock.sleep(leftMs);
    }
  };
}

/**
 * The agent's quiesce; an agent from before it (in an image made earlier) only reports the endpoints,
 * so an empty report counts as quiet there, as it did when that image was made.
 */
async function quiesce(session: AgentSession): Promise<{ frozen: boolean; endpoints: string[] }> {
  try {
    return await session.quiesceNetwork();
  } catch (err) {
    if (!(isRamifyError(err) && err.code === 'BAD_REQUEST' && /unknown agent method/.test(err.message))) throw err;
    const { endpoints } = await session.networkEndpoints();
    return { frozen: endpoints.length === 0, endpoints };
  }
}
