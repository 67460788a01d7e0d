/**
 * Invoking `runsc` the way this host needs (see docs/design/RUNTIME-GVISOR.md):
 * - `run`/`create`/`restore` start inside the sandbox's network namespace, in a private mount namespace
 *   with an empty directory bind-mounted over `/proc/sys/net/core`. Compatibility shim: runsc 20221219
 *   and 20240729 both take any netns with that file for the root netns and refuse `--network=sandbox`.
 * - `--net-disconnect-ok` (20240729 and later): a checkpoint with open or TIME_WAIT TCP connections
 *   resets them instead of failing (20221219 panicked on them and lost the sandbox).
 * - every other command runs under `nsenter --net=...` too, because runsc's control socket is an
 *   abstract unix socket that belongs to the netns (outside it runsc reports `stopped`).
 * - stdin is /dev/null and output goes to a log file: `run -detach` keeps inherited pipes open.
 * All child processes start from argv arrays.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { open, readFile } from 'node:fs/promises';
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

/** Oldest runsc release Ramify runs on: the first in Debian with `--net-disconnect-ok` (bookworm-backports). */
export const MIN_RUNSC_RELEASE = 20240729;

/** The release of a `runsc --version` line (`runsc version 0.0~20240729.0` → 20240729), or null. */
export function runscRelease(versionLine: string): number | null {
  const m = /(\d{8})/.exec(versionLine);
  return m ? Number(m[1]) : null;
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
    return [`--platform=${this.options.platform}`, '--network=sandbox', '--overlay2=root:memory', '--cpu-num-from-quota', '--net-disconnect-ok'];
  }

  /**
   * `run -detach` or `restore -detach` inside `netnsPath`. Output goes to `logFile`.
   * Rejects `RUNTIME_ERROR` with the tail of runsc's log when it exits non-zero.
   */
  async start(netnsPath: string, subcommand: string[], logFile: string): Promise<void> {
    const runsc = [...this.base(), ...this.startFlags(), ...subcommand];
    const argv = ['nsenter', `--net=${netnsPath}`, 'unshare', '-m', '--propagation', 'private', 'sh', '-c', SHIM_SCRIPT, 'ramify-netns-shim', this.options.emptyDir, ...runsc];
    const log = await open(logFile, 'a');
    try {
      const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', log.fd, log.fd] });
      const code = await new Promise<number>((resolve, reject) => {
        child.on('error', (e) => reject(new RamifyError('RUNTIME_UNAVAILABLE', `cannot start runsc: ${e.message}`)));
        child.on('close', (c) => resolve(c ?? -1));
      });
      if (code !== 0) {
        const reason = runscReason(await readFile(logFile, 'utf8'));
        throw new RamifyError('RUNTIME_ERROR', `runsc ${subcommand[0]} failed (exit ${code}): ${reason}`, { runtimeReason: reason });
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

/** A Go stack frame or panic scaffolding line of runsc's output (`pkg/x.(*T).f(...)`, `\tfile.go:12 +0x4`, `goroutine 7 [running]:`). */
const GO_TRACE_LINE = /^(\s|goroutine \d|created by |panic\(|\[recovered\]|[\w./-]+(\.\(\*?\w+\))?\.[\w.]+\(.*\)$|:$)/;

/**
 * What runsc said went wrong, in full, from its output or log: the last line that says an error,
 * failure or panic, without Go's stack traces and struct dumps around it (the line itself is kept
 * whole, up to 4000 characters). Falls back to the last non-trace line.
 */
export function runscReason(text: string): string {
  const lines = text.split('\n').map((l) => l.trimEnd()).filter((l) => l !== '' && !GO_TRACE_LINE.test(l));
  const said = [...lines].reverse().find((l) => /error|failed|fail|panic|cannot|invalid/i.test(l)) ?? lines[lines.length - 1] ?? 'no output';
  // runsc's log lines start with a glog prefix (`W1201 22:01:02.123456   1234 file.go:56] `): drop it. Go
  // struct dumps inside the line (`tcp.Endpoint{...}`, thousands of characters) become `{…}`.
  let reason = said.replace(/^[IWEF]\d{4} [\d:.]+\s+\d+ [\w.-]+:\d+\] /, '');
  if (reason.length > 300) {
    // Innermost `{...}` first, then the groups around them, until none is left.
    for (let before = ''; before !== reason; ) {
      before = reason;
      reason = reason.replace(/\{[^{}]*\}/g, '\u0000');
    }
    reason = reason.replace(/\u0000/g, '{…}');
  }
  return reason.slice(0, 4000);
}
