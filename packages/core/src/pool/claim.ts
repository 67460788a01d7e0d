/**
 * Adopting a warm pool sandbox as a new one (docs/design/POOL.md): the pool restored it on its own slot
 * with egress denied; its create has stored the sandbox's row, egress policy, networks and access token.
 * Here, before the create is acknowledged and before any command of the user can run: the stored egress
 * policy and networks replace the pool's deny-all (atomically: a packet meets one or the other), and, at
 * the same time (neither starts a process of the user), the agent re-seeds the sandbox (fresh entropy into the kernel pool, the host clock, hostname, id, the
 * request's envs), as after every restore.
 */
import type { Core } from '../context.js';
import { enforceStoredEgressPolicy } from '../egress/enforcement.js';
import { identityFor } from '../lifecycle/bring-up.js';
import { enforceStoredNetworks } from '../networks/enforcement.js';
import type { SandboxRecord } from '../ports/store.js';

/**
 * Make the pooled sandbox `record` (stored, holding the pooled slot) the sandbox it describes.
 * @throws the enforcers' errors, RamifyError `AGENT_UNREACHABLE` (its agent channel was lost); the caller
 *   releases it and records the failure, as for a failed restore.
 */
export async function adoptPooled(core: Core, record: SandboxRecord): Promise<void> {
  const startedMs = performance.now();
  const phases: Record<string, number> = {};
  const timed = async (name: string, step: () => Promise<void>): Promise<void> => {
    await step();
    phases[name] = Math.round(performance.now() - startedMs);
  };
  // Side by side: both are done before the create is acknowledged, and neither starts a user process.
  await Promise.all([
    timed('egressMs', async () => {
      await enforceStoredEgressPolicy(core, record);
      await enforceStoredNetworks(core, record);
    }),
    timed('identityMs', async () => (await core.sessions.get(record.id)).setIdentity(identityFor(core, record)).then(() => undefined)),
  ]);
  core.logger.debug('sandbox claimed from the warm pool', { sandboxId: record.id, ...phases });
}
