/**
 * Feeding the `stdin` data given to `commands.run` (foreground or background), across pauses. Every
 * chunk is one `POST .../stdin`, then `.../stdin/close`. A pause between the start and the close used to
 * lose the rest silently and leave the process waiting for an EOF forever (a foreground run with no
 * deadline never returned). Now:
 * - refused because the sandbox is `pausing`, `paused` or `resuming` (the daemon checks the state before
 *   it reaches the agent, so nothing was delivered): wait until it runs, send it again;
 * - the close lost to a dropped agent channel: sent again (closing twice is harmless);
 * - anything else (a data chunk whose delivery is unknown, a refusal while running): the process is
 *   killed, so the run ends (`CommandExitError`, SIGKILL) rather than waiting for input that will not
 *   come. A process that has exited already (`PROCESS_EXITED`) ends the feed quietly.
 */
import { RamifyError } from '../errors.js';
import type { CommandHandle } from './handle.js';
import type { ProcessRoutes } from './process-routes.js';

/** Data to feed a process's stdin; it is sent in order and stdin is closed after the last chunk. */
export type StdinData = string | Uint8Array | AsyncIterable<string | Uint8Array>;

/** Sandbox states a refused call waits out. */
const PAUSE_STATES: ReadonlySet<string> = new Set(['pausing', 'paused', 'resuming']);
/** Poll interval while waiting for the sandbox to run again, ms. */
const POLL_MS = 250;

/** Send `stdin` to `handle`'s process and close it; never rejects (see the module comment). */
export async function feedStdin(handle: CommandHandle, routes: ProcessRoutes, stdin: StdinData): Promise<void> {
  try {
    if (typeof stdin === 'string' || stdin instanceof Uint8Array) await deliver(routes, () => handle.sendStdin(stdin), 'data');
    else for await (const chunk of stdin) await deliver(routes, () => handle.sendStdin(chunk), 'data');
    await deliver(routes, () => handle.closeStdin(), 'close');
  } catch (err) {
    if (err instanceof RamifyError && (err.code === 'PROCESS_EXITED' || err.code === 'PROCESS_NOT_FOUND')) return;
    await untilRunning(routes).then(() => handle.kill(), () => undefined).catch(() => undefined);
  }
}

/** Run `send`; while it is refused by a pause, wait for the sandbox to run and send again. */
async function deliver(routes: ProcessRoutes, send: () => Promise<void>, kind: 'data' | 'close'): Promise<void> {
  for (;;) {
    try {
      return await send();
    } catch (err) {
      if (!(err instanceof RamifyError)) throw err;
      const paused = err.code === 'INVALID_STATE' && PAUSE_STATES.has((await routes.sandboxState().catch(() => ({ state: 'unknown' }))).state);
      const lostClose = kind === 'close' && (err.code === 'AGENT_UNREACHABLE' || err.code === 'API_UNREACHABLE');
      if (!paused && !lostClose) throw err;
      await untilRunning(routes);
    }
  }
}

/** Resolves once the sandbox is `running`; rejects when it is in any state other than a pause's. */
async function untilRunning(routes: ProcessRoutes): Promise<void> {
  for (;;) {
    const { state } = await routes.sandboxState();
    if (state === 'running') return;
    if (!PAUSE_STATES.has(state)) throw new RamifyError('INVALID_STATE', `sandbox is ${state}; stdin can no longer be delivered`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
