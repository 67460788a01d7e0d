/**
 * The live agent of a running sandbox, for the thin exec/files pass-throughs. A killed or unknown sandbox
 * fails at once with `SANDBOX_NOT_FOUND`; any other non-running state with `INVALID_STATE` (a paused
 * sandbox's message says to resume it). The session reconnects if its channel was lost.
 */
import type { AgentSession } from '@ramify/contracts';
import type { Core } from '../core.js';
import { loadSandbox } from '../lifecycle/records.js';
import { assertAgentReachable } from '../lifecycle/state-machine.js';

/**
 * @throws RamifyError `SANDBOX_NOT_FOUND`, `INVALID_STATE`, `AGENT_UNREACHABLE`.
 */
export async function agentFor(core: Core, sandboxId: string): Promise<AgentSession> {
  const record = await loadSandbox(core, sandboxId);
  assertAgentReachable(sandboxId, record.state);
  return core.sessions.get(sandboxId);
}
