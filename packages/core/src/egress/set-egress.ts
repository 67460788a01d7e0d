/**
 * Use-case: replace a sandbox's egress policy, atomically and live (running and paused sandboxes, no
 * restart): validate → lock → persist → enforce → acknowledge. If enforcing fails, the stored policy is
 * put back as it was and the error surfaces: what the store says is what the host enforces.
 */
import type { Core } from '../context.js';
import { loadSandbox, asRamifyError } from '../lifecycle/records.js';
import { assertEgressSettable } from '../lifecycle/state-machine.js';
import type { EgressPolicyRecord } from '../ports/store.js';
import { enforceEgressPolicy } from './enforcement.js';
import { canonicalEgressPolicy, parseEgressPolicy, type EgressPolicyInput } from './policy.js';

/**
 * Replace the whole policy of `sandboxId` with `input`: a rule list (`[]` opens egress again, any rule is
 * an allowlist) or `{ mode, rules }` (`{ mode: 'deny-all' }`: nothing leaves).
 * @returns the stored policy (mode and normalised rules).
 * @throws RamifyError `VALIDATION_FAILED` naming the first bad rule, or a mode that does not fit the rules
 *   (nothing changes then),
 *   `SANDBOX_NOT_FOUND` (also when killed), `INVALID_STATE` (error state), and the enforcer's error
 *   (`RUNTIME_ERROR` when it is not a RamifyError; the previous policy stays in force and stored).
 */
export async function setEgressPolicy(core: Core, sandboxId: string, input: EgressPolicyInput): Promise<EgressPolicyRecord> {
  // Validate before taking the lock: a bad rule never touches the sandbox or waits for it.
  const policy = parseEgressPolicy(input);
  return core.locks.run(sandboxId, async () => {
    const record = await loadSandbox(core, sandboxId);
    assertEgressSettable(sandboxId, record.state);
    const previous = await core.store.getEgressPolicy(sandboxId);
    const stored = await core.store.putEgressPolicy(sandboxId, canonicalEgressPolicy(policy), core.clock.now());
    try {
      await enforceEgressPolicy(core, record, policy);
    } catch (err) {
      if (previous) await core.store.putEgressPolicy(sandboxId, previous, previous.updatedAt);
      else await core.store.deleteEgressPolicy(sandboxId);
      core.logger.error('enforcing an egress policy failed; the previous one stays', { sandboxId, error: err instanceof Error ? err.message : String(err) });
      throw asRamifyError(err, 'RUNTIME_ERROR', `enforcing the egress policy of sandbox '${sandboxId}' failed (the previous policy stays in force)`);
    }
    return stored;
  });
}
