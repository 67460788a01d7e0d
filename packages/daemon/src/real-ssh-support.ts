/**
 * Test support for `real-ssh.test.ts`: the real OpenSSH tools (ssh, scp, sftp, rsync) and the built
 * `ramify` CLI run as child processes against an in-process daemon. Always asynchronous (`spawn`): a
 * synchronous child would block the daemon's event loop it talks to. Test support only.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A finished child: exit code (null when killed by a signal), stdout and stderr. */
export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `command args`, writing `input` to its stdin (then EOF). Output as Buffer in `raw`, text in `stdout`. */
export function run(command: string, args: string[], options: { input?: string | Buffer; env?: NodeJS.ProcessEnv } = {}): Promise<Ran & { raw: Buffer }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env: options.env ?? process.env });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      const raw = Buffer.concat(out);
      resolve({ code, raw, stdout: raw.toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(options.input ?? '');
  });
}

/**
 * OpenSSH client options for a test: no user or system config, no agent, no host key pinning, never a
 * prompt (BatchMode: a refusal is exit 255 at once), and only the identity given (none: no key at all).
 */
export function sshOptions(identity: string | null): string[] {
  const base = ['-F', '/dev/null', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes', '-o', 'LogLevel=ERROR', '-o', 'IdentityAgent=none', '-o', 'IdentitiesOnly=yes'];
  return identity === null ? [...base, '-o', 'PubkeyAuthentication=no'] : [...base, '-i', identity];
}

const CLI_MAIN = join(dirname(fileURLToPath(import.meta.resolve('@ramify/cli'))), 'main.js');

/** The built `ramify` CLI against `apiUrl` with `apiKey`. */
export function cli(connection: { apiUrl: string; apiKey: string }, args: string[], input?: string): Promise<Ran> {
  return run(process.execPath, [CLI_MAIN, '--api-url', connection.apiUrl, '--api-key', connection.apiKey, ...args], input === undefined ? {} : { input });
}

/** A background child (`ssh -N -L ...`): stopped with `stop()`, which resolves once it is gone. */
export function background(command: string, args: string[]): { stop(): Promise<void>; stderr(): string } {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const err: Buffer[] = [];
  child.stderr.on('data', (c: Buffer) => err.push(c));
  const gone = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return {
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await gone;
    },
    stderr: () => Buffer.concat(err).toString('utf8'),
  };
}

/** What a terminal session is fed (`ssh -tt`, commands on stdin): its size, its tty, arithmetic, exit 5. */
export const TERMINAL_INPUT = 'stty size; echo "tty=$(tty)"\necho "answer $((6*7))"\nexit 5\n';

/** Assert what {@link TERMINAL_INPUT} gives on a terminal: 80x24 (the size `ssh -tt` without one gets), a pts, 42, exit 5. */
export function assertTerminalRun(r: Ran): void {
  const text = r.stdout.replaceAll('\r\n', '\n');
  assert.equal(r.code, 5, text);
  assert.match(text, /^24 80$/m);
  assert.match(text, /^tty=\/dev\/pts\/\d+$/m);
  assert.match(text, /^answer 42$/m);
}
