/**
 * A session channel: `pty-req`, `env`, then `shell`, `exec` or the `sftp` subsystem (no other
 * subsystem, no X11, no agent forwarding), `window-change` and `signal` while it runs. A shell or
 * command runs in the sandbox through {@link bridgeProcess}: on a terminal when the client asked for one
 * (`ssh`, `ssh -t`), else on pipes (`ssh host cmd`, scp, rsync).
 */
import { DEFAULT_PTY_SIZE, MAX_PTY_CELLS, type PtySize } from '@ramify/contracts';
import type { ServerChannel, Session } from 'ssh2';
import { bridgeProcess, type ProcessBridge, type ProcessSpec } from './process-channel.js';
import { serveSftp } from './sftp/server.js';
import type { SshScope } from './scope.js';

/** What a shell without a terminal runs: bash reading commands from stdin, as sshd's login shell would. */
const SHELL_WITHOUT_TERMINAL = 'exec /bin/bash -l';
/**
 * `env` requests taken (others are refused, as sshd refuses what `AcceptEnv` does not name). Not LANG
 * and LC_*, which OpenSSH sends by default: a client's locale is rarely installed in the sandbox (every
 * program would warn); the sandbox's own, C.UTF-8, applies.
 */
const ACCEPTED_ENV = new Set(['TZ', 'COLORTERM', 'TERM_PROGRAM', 'TERM_PROGRAM_VERSION']);

/** A client's size (0 when it has no terminal of its own, e.g. `ssh -tt` with stdin a file) made valid. */
export function terminalSize(cols: number, rows: number): PtySize {
  const side = (n: number, fallback: number): number => (Number.isInteger(n) && n > 0 ? Math.min(n, MAX_PTY_CELLS) : fallback);
  return { cols: side(cols, DEFAULT_PTY_SIZE.cols), rows: side(rows, DEFAULT_PTY_SIZE.rows) };
}

/** Serve one session channel of an authenticated connection. */
export function serveSession(scope: SshScope, session: Session): void {
  const envs: Record<string, string> = {};
  let terminal: { term: string; size: PtySize } | null = null;
  let bridge: ProcessBridge | null = null;

  session.on('env', (accept, reject, info) => {
    if (ACCEPTED_ENV.has(info.key)) {
      envs[info.key] = info.val;
      accept?.();
    } else reject?.();
  });
  session.on('pty', (accept, _reject, info) => {
    terminal = { term: info.term || 'xterm-256color', size: terminalSize(info.cols, info.rows) };
    accept?.();
  });
  session.on('window-change', (accept, _reject, info) => {
    const size = terminalSize(info.cols, info.rows);
    if (terminal) terminal.size = size;
    bridge?.resize(size);
    accept?.();
  });
  session.on('signal', (accept, _reject, info) => {
    bridge?.signal(info.name);
    accept?.();
  });

  const start = async (channel: ServerChannel | undefined, cmd: string | undefined): Promise<void> => {
    if (!channel) return;
    const spec: ProcessSpec = terminal
      ? { kind: 'terminal', ...(cmd !== undefined ? { cmd } : {}), envs: { ...envs, TERM: terminal.term }, size: terminal.size }
      : { kind: 'command', cmd: cmd ?? SHELL_WITHOUT_TERMINAL, envs };
    try {
      await scope.ensureRunning();
      bridge = await bridgeProcess(scope.core, scope.sandboxId, channel, spec, { stderr: 'channel', exit: 'send' });
    } catch (err) {
      channel.stderr.write(`ramify: ${err instanceof Error ? err.message : String(err)}\n`);
      channel.exit(255);
      channel.end();
    }
  };
  session.on('shell', (accept) => void start(accept(), undefined));
  session.on('exec', (accept, _reject, info) => void start(accept(), info.command));
  session.on('sftp', (accept) => {
    const sftp = accept();
    if (sftp) serveSftp({ core: scope.core, sandboxId: scope.sandboxId, ensureRunning: async () => void (await scope.ensureRunning()) }, sftp);
  });
  session.on('subsystem', (_accept, reject) => reject?.());
}
