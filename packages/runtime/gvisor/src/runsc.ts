/**
 * Invoking `runsc` the way this host needs (see shared/design/RUNTIME-GVISOR.md):
 * - `run`/`create`/`restore` start inside the sandbox's network namespace, in a private mount namespace
 *   with an empty directory bind-mounted over `/proc/sys/net/core`. Compatibility shim for runsc
 *   20221219, which takes any netns with that file for the root netns and refuses `--network=sandbox`.
 * - every other command runs under `nsenter --net=...` too, because runsc's control socket is an
 *   abstract unix socket that belongs to the netns (outside it runsc reports `stopped`).
 * - stdin is /dev/null and output goes to a log file: `run -detach` keeps inherited pipes open.
 * All child processes start from argv arrays.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { open } from 'node:fs/promises';
import { RamifyError } from '@ramify/contracts';

export type RunscPlatform = 'ptrace' | 'systrap' | 'kvm';

export interface RunscOptions {
  /** Path of the runsc binary. */
  path: string;
  /** runsc `--root`: where it keeps container state. */
  stateDir: string;
  platform: RunscPlatform;
  /** An empty host directory for the /proc/sys/net/core shim. */
  emptyDir: string;
  /** Apply the /proc/sys/net/core shim (needed by runsc ≤ 2023; see {@link needsNetnsShim}). */
  netnsShim: boolean;
}

export interface CommandOutput {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The shim: a constant script; the empty dir and the runsc argv are positional parameters, never
 * interpolated into the script text.
 */
const SHIM_SCRIPT = 'mount --bind "$1" /proc/sys/net/core && shift && exec "$@"';

/** True for runsc releases that need the netns shim (the 2022 releases Debian 12 ships). */
export function needsNetnsShim(versionLine: string): boolean {
  const m = /(\d{8})/.exec(versionLine);
  return m ? Number(m[1]) < 20230601 : true;
}

/** Read `runsc --version`; rejects `RUNTIME_UNAVAILABLE` when runsc is not installed. */
export async function runscVersion(path: string): Promise<string> {
  const out = await collect(spawn(path, ['--version'], { stdio: ['ignore', 'pipe', 'pipe'] }), path);
  return out.stdout.split('\n')[0]?.trim() ?? '';
}

export class Runsc {
  constructor(readonly options: RunscOptions) {}

  private base(): string[] {
    return [this.options.path, '--root', this.options.stateDir];
  }

  /** Flags for commands that create a sandbox (run/restore). */
  private startFlags(): string[] {
    return [`--platform=${this.options.platform}`, '--network=sandbox', '--overlay2=root:memory', '--cpu-num-from-quota'];
  }

  /**
   * `run -detach` or `restore -detach` inside `netnsPath`. Output goes to `logFile`.
   * Rejects `RUNTIME_ERROR` with the tail of runsc's log when it exits non-zero.
   */
  async start(netnsPath: string, subcommand: string[], logFile: string): Promise<void> {
    const runsc = [...this.base(), ...this.startFlags(), ...subcommand];
    const argv = this.options.netnsShim
      ? ['nsenter', `--net=${netnsPath}`, 'unshare', '-m', '--propagation', 'private', 'sh', '-c', SHIM_SCRIPT, 'ramify-netns-shim', this.options.emptyDir, ...runsc]
      : ['nsenter', `--net=${netnsPath}`, ...runsc];
    const log = await open(logFile, 'a');
    try {
      const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', log.fd, log.fd] });
      const code = await new Promise<number>((resolve, reject) => {
        child.on('error', (e) => reject(new RamifyError('RUNTIME_UNAVAILABLE', `cannot start runsc: ${e.message}`)));
        child.on('close', (c) => resolve(c ?? -1));
      });
      if (code !== 0) {
        const { readFile } = await import('node:fs/promises');
        const tail = (await readFile(logFile, 'utf8')).trim().split('\n').slice(-5).join('\n');
        throw new RamifyError('RUNTIME_ERROR', `runsc ${subcommand[0]} failed (exit ${code}): ${tail}`);
      }
    } finally {
      await log.close();
    }
  }

  /** Run a runsc subcommand in the sandbox's netns and collect its output (never rejects on exit code). */
  inNetns(netnsPath: string, args: string[]): Promise<CommandOutput> {
    const argv = ['nsenter', `--net=${netnsPath}`, ...this.base(), ...args];
    return collect(spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] }), 'runsc');
  }

  /** Run a runsc subcommand that works from any netns (`delete`, `list`). */
  anywhere(args: string[]): Promise<CommandOutput> {
    const argv = [...this.base(), ...args];
    return collect(spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] }), 'runsc');
  }

  /** Spawn `runsc exec` in the sandbox's netns with the given stdio (for long-lived bridges). */
  spawnExec(netnsPath: string, sandboxId: string, argv: string[], stdio: StdioOptions): ChildProcess {
    const full = ['nsenter', `--net=${netnsPath}`, ...this.base(), 'exec', sandboxId, ...argv];
    return spawn(full[0]!, full.slice(1), { stdio });
  }
}

function collect(child: ChildProcess, what: string): Promise<CommandOutput> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', (e) => reject(new RamifyError('RUNTIME_UNAVAILABLE', `cannot run ${what}: ${e.message}`)));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}
