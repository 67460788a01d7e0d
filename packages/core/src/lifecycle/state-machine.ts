/**
 * The sandbox state machine: the ONE place that knows which lifecycle states may follow which, and what
 * each state allows. Every other module asks these functions instead of comparing states itself.
 *
 * ```
 * creating → running ⇄ (pausing → paused → resuming) → running
 * any (but killed) → killing → killed
 * any (but killed) → error
 * ```
 * Roll-backs are explicit edges: `pausing → running` (checkpoint refused, the sandbox keeps running) and
 * `resuming → paused` (restore failed, the image is intact, so a paused sandbox is never lost).
 */
import { RamifyError, notFound, type SandboxState } from '@ramify/contracts';

/** Legal successors of each state. */
const TRANSITIONS: Readonly<Record<SandboxState, readonly SandboxState[]>> = {
  creating: ['running', 'killing', 'error'],
  running: ['pausing', 'killing', 'error'],
  pausing: ['paused', 'running', 'killing', 'error'],
  paused: ['resuming', 'killing', 'error'],
  resuming: ['running', 'paused', 'killing', 'error'],
  killing: ['killed', 'error'],
  killed: [],
  error: ['killing'],
};

/** True when `from → to` is a legal transition. */
export function canTransition(from: SandboxState, to: SandboxState): boolean {
  return TRANSITIONS[from].includes(to);
}

/**
 * Throws unless `from → to` is legal.
 * @throws RamifyError `INVALID_STATE` (409) naming the sandbox and its current state.
 */
export function assertTransition(sandboxId: string, from: SandboxState, to: SandboxState): void {
  if (canTransition(from, to)) return;
  throw new RamifyError('INVALID_STATE', `sandbox '${sandboxId}' is ${from}; cannot go to ${to}${hintFor(from)}`, {
    id: sandboxId,
    state: from,
    target: to,
  });
}

/** The final state: nothing follows it and nothing is held. */
export function isTerminal(state: SandboxState): boolean {
  return TRANSITIONS[state].length === 0;
}

/** Whether calls that need the agent (exec, files, reconnects) are allowed in `state`. */
export function agentReachable(state: SandboxState): boolean {
  return state === 'running';
}

/** States in which the sandbox's process is supposed to be up in its runtime. */
export function expectsRuntimeInstance(state: SandboxState): boolean {
  return state === 'running';
}

/** States whose timeout clock runs (`endAt` set). */
export function timeoutClockRuns(state: SandboxState): boolean {
  return state === 'running';
}

/** The states whose timeout clock runs, for queries. */
export function timedStates(): SandboxState[] {
  return allStates().filter(timeoutClockRuns);
}

/** True when a request to reach `goal` has nothing to do (pause of a paused sandbox, resume of a running one). */
export function alreadyIn(state: SandboxState, goal: 'running' | 'paused'): boolean {
  return state === goal;
}

/**
 * Whether a call that needs the sandbox's agent (exec, files) may proceed.
 * @param error the record's `error` (why a sandbox in `error` failed), quoted in the message.
 * @throws RamifyError `SANDBOX_NOT_FOUND` for a killed sandbox, `SANDBOX_FAILED` in `error` (details.reason),
 *   `INVALID_STATE` for any other state than `running` (a paused sandbox's message says to resume it).
 */
export function assertAgentReachable(sandboxId: string, state: SandboxState, error: string | null = null): void {
  if (agentReachable(state)) return;
  if (isTerminal(state)) throw notFound('SANDBOX_NOT_FOUND', 'sandbox', sandboxId, { id: sandboxId }, ' (it was killed)');
  if (state === 'error') {
    throw new RamifyError('SANDBOX_FAILED', `sandbox '${sandboxId}' failed: ${error ?? 'no reason recorded'}; kill it`, { id: sandboxId, state, reason: error });
  }
  throw new RamifyError('INVALID_STATE', `sandbox '${sandboxId}' is ${state}${hintFor(state)}`, { id: sandboxId, state });
}

/** Whether a sandbox in `state` can be forked or snapshotted, and how: by checkpointing it first, or from its pause image. */
export function checkpointSourceFor(sandboxId: string, state: SandboxState): 'checkpoint-first' | 'pause-image' {
  if (state === 'paused') return 'pause-image';
  assertTransition(sandboxId, state, 'pausing');
  return 'checkpoint-first';
}

/**
 * Whether the timeout of a sandbox in `state` may be changed.
 * @throws RamifyError `SANDBOX_NOT_FOUND` when killed, `INVALID_STATE` while a transition is in flight or in `error`.
 */
export function assertTimeoutSettable(sandboxId: string, state: SandboxState): void {
  if (state === 'running' || state === 'paused') return;
  if (isTerminal(state)) throw notFound('SANDBOX_NOT_FOUND', 'sandbox', sandboxId, { id: sandboxId }, ' (it was killed)');
  throw new RamifyError('INVALID_STATE', `sandbox '${sandboxId}' is ${state}; its timeout cannot be changed now`, { id: sandboxId, state });
}

/** States whose slot carries the sandbox's enforced egress policy (set live; re-applied on daemon start). */
export function egressEnforced(state: SandboxState): boolean {
  return state === 'running' || state === 'paused';
}

/**
 * Whether the egress policy of a sandbox in `state` may be replaced: running and paused ones, live (no restart).
 * @throws RamifyError `SANDBOX_NOT_FOUND` when killed, `INVALID_STATE` otherwise (mid-transition, or `error`).
 */
export function assertEgressSettable(sandboxId: string, state: SandboxState): void {
  if (egressEnforced(state)) return;
  assertNotKilled(sandboxId, state);
  throw new RamifyError('INVALID_STATE', `sandbox '${sandboxId}' is ${state}; its egress policy cannot be changed now${hintFor(state)}`, { id: sandboxId, state });
}

/**
 * For calls about a sandbox that treat a killed one as gone (egress policy and log).
 * @throws RamifyError `SANDBOX_NOT_FOUND` when `state` is terminal.
 */
export function assertNotKilled(sandboxId: string, state: SandboxState): void {
  if (isTerminal(state)) throw notFound('SANDBOX_NOT_FOUND', 'sandbox', sandboxId, { id: sandboxId }, ' (it was killed)');
}

/** States that `list` shows when the caller names none. */
export function defaultListedStates(): SandboxState[] {
  return (Object.keys(TRANSITIONS) as SandboxState[]).filter((s) => !isTerminal(s));
}

/** Every state, in table order. */
export function allStates(): SandboxState[] {
  return Object.keys(TRANSITIONS) as SandboxState[];
}

function hintFor(state: SandboxState): string {
  switch (state) {
    case 'paused':
      return '; resume it first';
    case 'pausing':
    case 'resuming':
    case 'creating':
    case 'killing':
      return '; another operation is in progress, retry when it finishes';
    case 'killed':
      return '; it was killed';
    case 'error':
      return '; it failed, kill it';
    default:
      return '';
  }
}
