/**
 * The live agent of a running sandbox, for the thin exec/files pass-throughs. A killed or unknown sandbox
 * fails at once with `SANDBOX_NOT_FOUND`, a failed one (`error`) with `SANDBOX_FAILED` and its reason; any
 * other non-running state with `INVALID_STATE` (a paused sandbox's message says to resume it). The
 * session reconnects if its channel was lost. A call whose channel is lost because the sandbox's
 * runtime instance exited fails with `SANDBOX_FAILED` (and the sandbox is failed), not `AGENT_UNREACHABLE`.
 */
import { RamifyError, isRamifyError, type AgentSession } from '@ramify/contracts';
import type { Core } from '../context.js';
import { handleInstanceLost } from '../lifecycle/instance-lost.js';
import { loadSandbox } from '../lifecycle/records.js';
import { assertAgentReachable } from '../lifecycle/state-machine.js';

/**
 * @throws RamifyError `SANDBOX_NOT_FOUND`, `SANDBOX_FAILED`, `INVALID_STATE`, `AGENT_UNREACHABLE`.
 */
export async function agentFor(core: Core, sandboxId: string): Promise<AgentSession> {
  const record = await loadSandbox(core, sandboxId);
  assertAgentReachable(sandboxId, record.state, record.error);
  return explainingLostInstances(core, sandboxId, await core.sessions.get(sandboxId));
}

/** `session`, whose calls that reject with `AGENT_UNREACHABLE` are explained by {@link explain}. */
function explainingLostInstances(core: Core, sandboxId: string, session: AgentSession): AgentSession {
  return new Proxy(session, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]): unknown => {
        const result: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        return result instanceof Promise ? result.catch(async (err: unknown) => { throw await explain(core, sandboxId, err); }) : result;
      };
    },
  });
}

/**
 * Whether `isAlive` holds for {@link EXIT_SETTLE_MS}: a channel can close a moment before the runtime's
 * process has finished exiting (checked every {@link EXIT_POLL_MS}).
 */
async function stillAlive(isAlive: () => Promise<boolean>): Promise<boolean> {
  for (let waited = 0; ; waited += EXIT_POLL_MS) {
    if (!(await isAlive().catch(() => true))) return false;
    if (waited >= EXIT_SETTLE_MS) return true;
    await new Promise((resolve) => setTimeout(resolve, EXIT_POLL_MS));
  }
}

/** How long a lost channel's sandbox is watched for its runtime process to exit, ms. */
const EXIT_SETTLE_MS = 1_000;
const EXIT_POLL_MS = 100;

/**
 * An `AGENT_UNREACHABLE` of a sandbox whose runtime instance is gone becomes `SANDBOX_FAILED` (after the
 * sandbox is failed with the reason); anything else is returned as it is.
 */
async function explain(core: Core, sandboxId: string, err: unknown): Promise<unknown> {
  if (!isRamifyError(err) || err.code !== 'AGENT_UNREACHABLE') return err;
  const record = await core.store.getSandbox(sandboxId);
  const runtime = core.runtimes.find((r) => r.name === record?.runtime);
  if (!record || !runtime?.isAlive) return err;
  if (record.state === 'running' && (await stillAlive(() => runtime.isAlive!(sandboxId)))) return err;
  await handleInstanceLost(core, sandboxId, 'call');
  const failed = await core.store.getSandbox(sandboxId);
  if (failed?.state !== 'error') return err;
  return new RamifyError('SANDBOX_FAILED', `sandbox '${sandboxId}' failed: ${failed.error ?? 'its runtime instance exited'}`, { id: sandboxId, reason: failed.error });
}
