/**
 * Child processes of the microVM runtime on the host: always argv arrays, data on stdin, never a shell
 * string. {@link run} collects output and never rejects on a non-zero exit; {@link runChecked} does.
 */
import { spawn } from 'node:child_process';
import { RamifyError } from '@ramify/contracts';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Text or bytes written to the child's stdin (closed afterwards); default: stdin is /dev/null. */
  input?: string | Uint8Array;
  cwd?: string;
  /** Extra environment variables, merged over this process's. */
  env?: Record<string, string>;
}

/**
 * Run `argv`; resolves with its exit code and output. Rejects `RUNTIME_UNAVAILABLE` only when the
 * program cannot be started at all (not installed), naming the Debian package that provides it.
 */
export function run(argv: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const [cmd, ...args] = argv;
    const child = spawn(cmd!, args, {
      stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      cwd: options.cwd,
      env: options.env ? { ...process.env, ...options.env } : process.env,
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', (err) => reject(new RamifyError('RUNTIME_UNAVAILABLE', `cannot run ${cmd}: ${err.message}${hintFor(cmd!)}`)));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    if (options.input !== undefined) {
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(options.input);
    }
  });
}

/** Like {@link run}, but rejects `RUNTIME_ERROR` with the command's stderr on a non-zero exit. */
export async function runChecked(argv: readonly string[], options: RunOptions = {}): Promise<string> {
  const r = await run(argv, options);
  if (r.code !== 0) {
    const out = tail(r.stderr.trim() || r.stdout);
    throw new RamifyError('RUNTIME_ERROR', `${argv.slice(0, 3).join(' ')} failed (exit ${r.code}): ${out}`, { argv: argv.slice(0, 6) });
  }
  return r.stdout;
}

/** Debian package that provides each host tool this runtime uses. */
const PACKAGE_OF: Record<string, string> = {
  'qemu-system-x86_64': 'qemu-system-x86',
  'qemu-img': 'qemu-utils',
  'mkfs.ext4': 'e2fsprogs',
  cpio: 'cpio',
  'dpkg-deb': 'dpkg',
  'apt-get': 'apt',
  'apt-cache': 'apt',
  busybox: 'busybox-static',
  tc: 'iproute2',
  ip: 'iproute2',
  nsenter: 'util-linux',
  perl: 'perl-base',
  cp: 'coreutils',
};

function hintFor(cmd: string): string {
  const base = cmd.split('/').pop() ?? cmd;
  const pkg = PACKAGE_OF[base];
  return pkg ? ` (install it with: apt-get install -y ${pkg})` : '';
}

/** The last `lines` lines of `text`, trimmed. */
export function tail(text: string, lines = 8): string {
  return text.trim().split('\n').slice(-lines).join('\n');
}
