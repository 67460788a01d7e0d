/**
 * What a model should do next after each Ramify error: a one-line hint per error code, and for errors
 * that pass by themselves how long to wait before retrying. The codes are `@ramify/contracts`' (the
 * daemon's and the SDK's); the hint is appended to every tool error (see results.ts).
 */
import type { ErrorCode, RamifyError } from '@ramify/sdk';

/** Wait before retrying a pause that open connections blocked, ms (the daemon waited for quiet already). */
export const CHECKPOINT_RETRY_AFTER_MS = 5_000;
/** Wait before retrying while a sandbox is between states (pausing, resuming, waking), ms. */
export const TRANSITION_RETRY_AFTER_MS = 2_000;

/** The advice attached to a tool error. */
export interface ErrorHint {
  hint: string;
  /** Set when simply retrying later may succeed: wait this long first, ms. */
  retryAfterMs?: number;
}

const HINTS: Partial<Record<ErrorCode, (err: RamifyError) => ErrorHint>> = {
  CHECKPOINT_BLOCKED: (err) => ({
    hint: `open TCP connections kept the sandbox from being checkpointed (it keeps running)${endpoints(err)}: close them (stop the client or server process with command_kill) and retry sandbox_pause/sandbox_fork/snapshot_create after ${CHECKPOINT_RETRY_AFTER_MS} ms`,
    retryAfterMs: CHECKPOINT_RETRY_AFTER_MS,
  }),
  INVALID_STATE: (err) => {
    const state = typeof err.details?.state === 'string' ? err.details.state : undefined;
    if (state === 'paused') return { hint: 'the sandbox is paused: call sandbox_resume first' };
    if (state === 'killed' || state === 'killing') return { hint: 'the sandbox is killed: create a new one with sandbox_create (or from a snapshot)' };
    if (state === 'pausing' || state === 'resuming' || state === 'creating') {
      return { hint: `the sandbox is ${state}: retry after ${TRANSITION_RETRY_AFTER_MS} ms`, retryAfterMs: TRANSITION_RETRY_AFTER_MS };
    }
    return { hint: "check the sandbox's state with sandbox_get; a paused sandbox needs sandbox_resume" };
  },
  SANDBOX_NOT_FOUND: () => ({ hint: 'no such sandbox (or it was killed): list them with sandbox_list, or create one with sandbox_create' }),
  SANDBOX_FAILED: () => ({ hint: 'the sandbox failed and cannot run again: sandbox_kill it and create a new one' }),
  TEMPLATE_NOT_FOUND: () => ({ hint: "no such template: read resource ramify://templates for the names (the default is 'base')" }),
  TEMPLATE_NOT_BUILT: () => ({ hint: 'the template has no image for that runtime: leave runtime out, or build the template for it (ramify template build)' }),
  SNAPSHOT_NOT_FOUND: () => ({ hint: 'no such snapshot: list them with snapshot_list' }),
  PROCESS_NOT_FOUND: () => ({ hint: 'no such process in this sandbox: use the pid command_start returned (processes are forgotten a while after they exit)' }),
  PROCESS_EXITED: () => ({ hint: 'the process has exited: read what it wrote with command_output' }),
  FILE_NOT_FOUND: () => ({ hint: 'no such file: list the directory with files_list (paths are absolute inside the sandbox)' }),
  IS_A_DIRECTORY: () => ({ hint: 'the path is a directory: use files_list to see what is in it' }),
  NOT_A_DIRECTORY: () => ({ hint: 'a component of the path is a file, not a directory: check it with files_list' }),
  CWD_NOT_FOUND: () => ({ hint: 'the working directory does not exist: create it first (command_run "mkdir -p DIR") or leave cwd out' }),
  NOT_UTF8: () => ({ hint: "the file is not UTF-8 text: read it with encoding 'base64' (or 'auto')" }),
  VALIDATION_FAILED: (err) => ({ hint: `fix the argument${field(err)} and call again` }),
  BAD_REQUEST: (err) => ({ hint: `fix the argument${field(err)} and call again` }),
  PAYLOAD_TOO_LARGE: () => ({ hint: 'the request is too large: write the file in parts, or create it with a command inside the sandbox' }),
  NO_SPACE: () => ({ hint: 'the sandbox has no room left: remove files (files_remove), or create it with more memoryMB (gVisor keeps files in memory)' }),
  COMMAND_TIMEOUT: () => ({ hint: 'the command hit its deadline and was killed: raise timeoutMs, or run it with command_start and poll command_output' }),
  RUNTIME_UNAVAILABLE: () => ({ hint: "the runtime is not available on this host: leave runtime out (the default is the host's first runtime)" }),
  PORT_NOT_EXPOSED: () => ({ hint: 'the port is not exposed: call port_expose first' }),
  UNAUTHORIZED: () => ({ hint: 'the API key is missing or wrong: set RAMIFY_API_KEY (or --api-key) for ramify mcp, or the Authorization header for /mcp' }),
  FORBIDDEN: () => ({ hint: 'this API key may not do that' }),
  API_UNREACHABLE: () => ({ hint: 'the Ramify daemon is not reachable: start it (ramify serve) or fix RAMIFY_API_URL', retryAfterMs: TRANSITION_RETRY_AFTER_MS }),
  REQUEST_TIMEOUT: () => ({ hint: 'the daemon did not answer in time (a busy host): retry after a moment', retryAfterMs: TRANSITION_RETRY_AFTER_MS }),
  AGENT_UNREACHABLE: () => ({ hint: "the sandbox's agent did not answer: retry; if it persists, sandbox_kill it and create a new one", retryAfterMs: TRANSITION_RETRY_AFTER_MS }),
  EXPLORE_FAILED: () => ({ hint: "every strategy failed (each entry's error says how) and their forks were handled as keep says: fix the commands or the check and explore again" }),
  CONFLICT: () => ({ hint: 'something still needs it or the name is taken: see the message, pick another name or remove what depends on it' }),
  SSH_UNAVAILABLE: () => ({ hint: 'this daemon serves no SSH gateway' }),
};

const field = (err: RamifyError): string => {
  const { field: f, rule } = err.details ?? {};
  if (typeof f === 'string') return ` '${f}'`;
  return typeof rule === 'string' ? ` (the egress rule '${rule}')` : '';
};
const endpoints = (err: RamifyError): string => {
  const list = err.details?.endpoints;
  return Array.isArray(list) && list.length > 0 ? ` (${list.join(', ')})` : '';
};

/** The hint for `err`; a generic one for codes without their own. */
export function hintFor(err: RamifyError): ErrorHint {
  return HINTS[err.code]?.(err) ?? { hint: 'see the message; check the arguments and the sandbox (sandbox_get) and retry if it may pass' };
}
