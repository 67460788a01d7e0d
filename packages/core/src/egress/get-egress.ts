/**
 * Use-case: read a sandbox's egress policy, and its mapping to the API shape.
 */
import type { EgressPolicyInfo } from '@ramify/contracts';
import type { Core } from '../context.js';
import { loadSandbox } from '../lifecycle/records.js';
import { assertNotKilled } from '../lifecycle/state-machine.js';
import type { EgressPolicyRecord } from '../ports/store.js';
import type { CanonicalEgressPolicy } from './policy.js';

/** A sandbox's policy as in force; `updatedAt` null when none was ever set (open). */
export type SandboxEgressPolicy = Omit<EgressPolicyRecord, 'updatedAt'> & { updatedAt: number | null };

/**
 * The policy of `sandboxId` (normalised rules, in order).
 * @throws RamifyError `SANDBOX_NOT_FOUND` (also when killed).
 */
export async function getEgressPolicy(core: Core, sandboxId: string): Promise<SandboxEgressPolicy> {
  const record = await loadSandbox(core, sandboxId);
  assertNotKilled(sandboxId, record.state);
  return (await core.store.getEgressPolicy(sandboxId)) ?? { sandboxId, mode: 'open', rules: [], updatedAt: null };
}

/**
 * The policy stored for `sandboxId` as `{ mode, rules }` (a copy), or open when none was ever set: what a
 * snapshot of the sandbox records. No state check (the caller holds the sandbox's lock).
 */
export async function storedEgressPolicy(core: Pick<Core, 'store'>, sandboxId: string): Promise<CanonicalEgressPolicy> {
  const stored = await core.store.getEgressPolicy(sandboxId);
  return stored ? { mode: stored.mode, rules: [...stored.rules] } : { mode: 'open', rules: [] };
}

/** The API shape of a policy. */
export function toEgressPolicyInfo(policy: SandboxEgressPolicy): EgressPolicyInfo {
  return {
    rules: [...policy.rules],
    mode: policy.mode,
    updatedAt: policy.updatedAt === null ? null : new Date(policy.updatedAt).toISOString(),
  };
}
