/**
 * Pseudo-terminals come from node-pty's native addon (`@lydell/node-pty`: Microsoft's node-pty with
 * prebuilt N-API binaries, so nothing is compiled for the sandbox's Node). We call its two native
 * functions, `fork` (forkpty(3): a new session on a new terminal, then execve) and `resize`
 * (TIOCSWINSZ), and read the master ourselves like a pipe. node-pty's own `UnixTerminal` would destroy
 * the master 200 ms after the exit even while a slow reader holds it paused, losing the output that
 * was still in the terminal; see docs/design/TERMINALS.md.
 *
 * The addon is loaded on the first terminal, so an agent without it (a bundle run from a folder with no
 * `node_modules`) serves everything else. Templates place it beside the bundle:
 * `/opt/ramify/node_modules/@lydell/node-pty-linux-<arch>/pty.node`.
 */
import { createRequire } from 'node:module';
import { RamifyError } from '@ramify/contracts';

/** The native functions of node-pty 1.1 this agent uses (`src/unix/pty.cc`). */
export interface PtyAddon {
  /**
   * forkpty(3) then execvp(`file`, [file, ...args]) with `env` (`KEY=value` strings) in `cwd`; uid/gid
   * -1 keep the caller's. `onExit` runs with the exit code and the signal number (0 when none).
   * @returns the master's fd (non-blocking, close-on-exec), the child's pid and the terminal's path.
   */
  fork(
    file: string,
    args: string[],
    env: string[],
    cwd: string,
    cols: number,
    rows: number,
    uid: number,
    gid: number,
    utf8: boolean,
    helperPath: string,
    onExit: (code: number, signal: number) => void,
  ): { fd: number; pid: number; pty: string };
  /** TIOCSWINSZ on the master `fd` (Linux then signals the foreground group; gVisor does not). */
  resize(fd: number, cols: number, rows: number): void;
}

let addon: PtyAddon | undefined;

/**
 * The addon for this platform, loaded once.
 * @throws RamifyError INTERNAL when it is not installed beside the agent or cannot be loaded.
 */
export function loadPtyAddon(): PtyAddon {
  if (addon) return addon;
  const name = `@lydell/node-pty-${process.platform}-${process.arch}/pty.node`;
  try {
    addon = createRequire(import.meta.url)(name) as PtyAddon;
    return addon;
  } catch (err) {
    throw new RamifyError('INTERNAL', `terminals are not available in this sandbox: cannot load ${name} (${(err as Error).message})`);
  }
}
