/**
 * An interactive session: a terminal in the sandbox (`sbx.pty`) joined to the local one. Keystrokes go
 * out as bytes (one request in flight, the rest merged), output comes back as bytes, every local resize
 * is forwarded, and the local terminal is restored however the session ends: the remote program exits,
 * an error (sandbox killed, daemon lost), a signal to this process, or the local terminal going away.
 */
import { CommandExitError, isRamifyError, type CommandResult, type PtyHandle, type Sandbox } from '@ramify/sdk';
import { coalescingSender, concatBytes } from './coalescing-sender.js';
import type { LocalTerminal, TerminalSize } from './local-terminal.js';

/** Signals that end a session (the remote terminal is killed, then this process exits 128+N). */
export const SESSION_SIGNALS: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGHUP', 'SIGINT', 'SIGQUIT'];
/** How long a session ended by a signal waits for the remote kill to be acknowledged, ms. */
export const KILL_ON_SIGNAL_BOUND_MS = 2000;

/** What to run and how (the options of `sbx.pty.create`, minus size and output). */
export interface ShellSessionOpts {
  /** A shell command line; default the PTY API's login shell, `/bin/bash -i -l`. */
  cmd?: string;
  cwd?: string;
  envs?: Record<string, string>;
  user?: string;
  /** Where notes for the user go (stderr). */
  notes: NodeJS.WritableStream;
}

/**
 * How a session ended: the remote program exited (its result, non-zero codes and signals included), or
 * this process got a signal / lost its terminal (`signal`; the remote terminal was then killed).
 */
export type ShellOutcome = { kind: 'exit'; result: CommandResult } | { kind: 'signal'; signal: NodeJS.Signals };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());

/** Kill the remote terminal, waiting at most {@link KILL_ON_SIGNAL_BOUND_MS} (the daemon may be unreachable). */
async function killBounded(handle: Promise<PtyHandle>): Promise<void> {
  await Promise.race([handle.then((h) => h.kill()).catch(() => undefined), sleep(KILL_ON_SIGNAL_BOUND_MS)]);
}

/**
 * Run one session in `sbx` on `term` until it ends (see {@link ShellOutcome}). Raw mode is on from
 * before the terminal starts (so nothing typed meanwhile is echoed locally) until this returns or throws.
 * Throws what `pty.create` / the handle's `wait` throw: `SANDBOX_NOT_FOUND` (killed meanwhile),
 * `INVALID_STATE` (paused), `CWD_NOT_FOUND`, `SANDBOX_FAILED`, `API_UNREACHABLE`.
 */
export async function runShellSession(sbx: Sandbox, term: LocalTerminal, opts: ShellSessionOpts): Promise<ShellOutcome> {
  let stop!: (signal: NodeJS.Signals) => void;
  const stopped = new Promise<ShellOutcome>((resolve) => { stop = (signal) => resolve({ kind: 'signal', signal }); });
  const handlers = SESSION_SIGNALS.map((signal) => [signal, () => stop(signal)] as const);
  for (const [signal, handler] of handlers) process.on(signal, handler);
  const unsubscribe = [term.onGone(() => stop('SIGHUP'))];
  let creating: Promise<PtyHandle> | undefined;
  let outcome: ShellOutcome | undefined;
  try {
    term.enterRaw();
    const { notes, ...start } = opts;
    creating = sbx.pty.create({ ...start, ...term.size(), onData: (bytes) => term.write(bytes) });
    creating.catch(() => undefined);
    const first = await Promise.race([creating, stopped]);
    if ('kind' in first) return (outcome = first);
    const handle = first;
    unsubscribe.push(...forward(term, handle, notes));
    const exited = handle.wait().then(
      (result): ShellOutcome => ({ kind: 'exit', result }),
      (err: unknown): ShellOutcome => {
        if (err instanceof CommandExitError) return { kind: 'exit', result: err.result };
        throw err;
      },
    );
    return (outcome = await Promise.race([exited, stopped]));
  } finally {
    for (const off of unsubscribe) off();
    term.restore();
    for (const [signal, handler] of handlers) process.off(signal, handler);
    if (outcome?.kind === 'signal' && creating) await killBounded(creating);
  }
}

/** Keystrokes and resizes from `term` to `handle`; returns the unsubscribe functions. */
function forward(term: LocalTerminal, handle: PtyHandle, notes: NodeJS.WritableStream): Array<() => void> {
  // One note per kind of failure until input gets through again (a pause: one note, not one per key).
  const noted = new Set<string>();
  const onInputError = (err: unknown): void => {
    const code = isRamifyError(err) ? err.code : 'INTERNAL';
    // The program has exited: its exit (and the end of the session) is on its way.
    if (code === 'PROCESS_EXITED' || noted.has(code)) return;
    noted.add(code);
    term.note(notes, code === 'INVALID_STATE'
      ? '[ramify: the sandbox is not running (paused?): keystrokes are dropped until it runs again]'
      : `[ramify: keystrokes not delivered: ${code}: ${err instanceof Error ? err.message : String(err)}]`);
  };
  const input = coalescingSender(async (bytes: Uint8Array) => {
    await handle.sendInput(bytes);
    noted.clear();
  }, concatBytes, onInputError);
  // Only the latest size matters; a failed resize (the program exited, the sandbox paused) is not worth a note.
  const resize = coalescingSender((size: TerminalSize) => handle.resize(size), (_pending, next) => next, () => undefined);
  return [term.onInput((bytes) => input.push(bytes)), term.onResize((size) => resize.push(size))];
}
