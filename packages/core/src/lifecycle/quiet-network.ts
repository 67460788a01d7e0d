/**
 * The quiet-network rule: a runtime with `checkpointNeedsQuietNetwork` must not checkpoint a sandbox
 * while a non-loopback TCP endpoint is established (gVisor resets it, and a server whose connection was
 * reset can stop accepting after a later restore; see docs/design/RUNTIME-GVISOR.md). So before
 * every checkpoint core asks the agent to quiesce: once no such endpoint is connected, the agent stops
 * every other process (so none can connect between this check and the checkpoint) and checks again.
 * Core polls, within a bound, until that succeeds; if it does not, the checkpoint is refused and the
 * sandbox keeps running. Pause never kills a sandbox. The stopped processes continue at the agent's next
 * host connection: after the restore, or after a checkpoint that failed.
 */
import { isRamifyError, RamifyError, type AgentSession } from '@ramify/contracts';
import type { Core } from '../context.js';
import type { Runtime } from '../ports/runtime.js';

/**
 * Resolve once the sandbox has no established non-loopback TCP endpoint and its processes are stopped
 * for the checkpoint. At once when the runtime does not need a quiet network. (Endpoints the sandbox
 * closed, in TIME_WAIT, are not waited for: runsc resets them harmlessly with `--net-disconnect-ok`.)
 * @throws RamifyError `CHECKPOINT_BLOCKED` (409) listing the endpoints still connected after
 *   `quietNetworkTimeoutMs`; `AGENT_UNREACHABLE` when the agent cannot be asked. The sandbox runs on.
 */
export async function waitForQuietNetwork(core: Pick<Core, 'sessions' | 'clock' | 'options'>, sandboxId: string, runtime: Runtime): Promise<void> {
  await pollUntilQuiet(core, sandboxId, runtime, async (session) => quiesce(session));
}

/**
 * Like {@link waitForQuietNetwork}, but only watching (no process is stopped): called while the sandbox
 * is still `running`, so its commands and file calls go on while a pause waits for connections to close.
 * @throws RamifyError `CHECKPOINT_BLOCKED`, `AGENT_UNREACHABLE`, as {@link waitForQuietNetwork}.
 */
export async function waitForNoConnections(core: Pick<Core, 'sessions' | 'clock' | 'options'>, sandboxId: string, runtime: Runtime): Promise<void> {
  await pollUntilQuiet(core, sandboxId, runtime, async (session) => {
    const { endpoints } = await session.networkEndpoints();
    return { quiet: endpoints.length === 0, endpoints };
  });
}

/** One look at the sandbox's connections: `quiet` when none holds the checkpoint up. */
interface QuietCheck {
  quiet: boolean;
  endpoints: string[];
}

async function pollUntilQuiet(
  core: Pick<Core, 'sessions' | 'clock' | 'options'>,
  sandboxId: string,
  runtime: Runtime,
  check: (session: AgentSession) => Promise<QuietCheck>,
): Promise<void> {
  if (!runtime.capabilities.checkpointNeedsQuietNetwork) return;
  const { quietNetworkTimeoutMs, quietNetworkPollMs } = core.options;
  const deadline = core.clock.now() + quietNetworkTimeoutMs;
  for (;;) {
    const session = await core.sessions.get(sandboxId);
    const { quiet, endpoints } = await check(session);
    if (quiet) return;
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
 * The agent's quiesce; an agent from before it (in an image made earlier) only reports the endpoints,
 * so an empty report counts as quiet there, as it did when that image was made.
 */
async function quiesce(session: AgentSession): Promise<QuietCheck> {
  try {
    // `frozen`: the agent stopped every process and no connection is left.
    const { frozen, endpoints } = await session.quiesceNetwork();
    return { quiet: frozen, endpoints };
  } catch (err) {
    if (!(isRamifyError(err) && err.code === 'BAD_REQUEST' && /unknown agent method/.test(err.message))) throw err;
    const { endpoints } = await session.networkEndpoints();
    return { quiet: endpoints.length === 0, endpoints };
  }
}
