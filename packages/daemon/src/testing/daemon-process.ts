/**
 * A `ramify serve` child process as an operator runs it: `node packages/cli/dist/main.js serve ...`,
 * optionally inside a network namespace (see {@link inNetns}), its log in a file, up once
 * `GET /v1/health` answers. Test support only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The CLI's executable in this checkout (the packages must be built). */
export const CLI_MAIN = fileURLToPath(new URL('../../../cli/dist/main.js', import.meta.url));

export interface DaemonProcessOptions {
  /** `ramify serve`'s flags (after `serve`). */
  args: string[];
  /** Added to this process's environment (secrets go here, not in argv). */
  env?: Record<string, string>;
  /** Network namespace to run in; none: this process's. */
  netns?: string;
  /** Where its stdout and stderr go (appended). */
  logFile: string;
  /** Its API, polled until it answers, e.g. `http://10.199.0.11:7423`. */
  url: string;
  /** How long it may take to answer, ms; default 120,000 (runtimes are probed at start). */
  startTimeoutMs?: number;
}

export interface DaemonProcess {
  url: string;
  pid: number;
  /** Exit code or signal once it has exited, else null. */
  exited(): { code: number | null; signal: NodeJS.Signals | null } | null;
  /** SIGTERM (a graceful stop), SIGKILL after `graceMs` (default 30,000); resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
  /** `kill -9`: no chance to clean up or say goodbye; resolves once it has exited. */
  kill9(): Promise<void>;
  /** The last `lines` lines of its log. */
  logTail(lines?: number): string;
}

/**
 * What `ip netns exec NS` does, keeping the cgroup mounts: enter the namespace, then in a mount namespace
 * of its own (slave: nothing propagates back) mount a sysfs of that network namespace over /sys
 * (`/sys/class/net` shows the host's interfaces) and move the machine's `/sys/fs/cgroup` tree back under
 * it (`ip netns exec` loses it, and runsc cannot set up a sandbox's cgroup without it). Every step execs
 * in place: the child's pid is the daemon's. A constant script; the command comes as "$@".
 */
export const IN_NETNS_SCRIPT = 'set -e; d=$(mktemp -d); mount --rbind /sys/fs/cgroup "$d"; umount -l /sys; mount -t sysfs sysfs /sys; mount --move "$d" /sys/fs/cgroup; rmdir "$d"; exec "$@"';

/** argv running `argv` in network namespace `netns` (see {@link IN_NETNS_SCRIPT}). */
export function inNetns(netns: string, argv: string[]): string[] {
  return ['nsenter', `--net=/run/netns/${netns}`, 'unshare', '--mount', '--propagation', 'slave', 'sh', '-c', IN_NETNS_SCRIPT, 'sh', ...argv];
}

/** A port free on `host` now (the kernel's pick). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Run `ramify <args>` (this checkout's CLI) with `env` added to this process's environment until it exits
 * (SIGKILL after `timeoutMs`, default 60 s); its exit code and output (stdout and stderr, as they came).
 */
export async function runCli(args: string[], options: { env?: Record<string, string>; timeoutMs?: number } = {}): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [CLI_MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...options.env } });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  return { code, output };
}

/**
 * A child process (`node -e`, not a daemon) listening on a free port of 127.0.0.1, as another program
 * holding a daemon's address; resolves once it listens. The caller kills `child`.
 */
export async function holdPort(): Promise<{ child: ChildProcess; pid: number; port: number }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['-e', `require('net').createServer().listen(${port}, '127.0.0.1', () => console.log('listening'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the port holder exited (${code})`)));
  });
  return { child, pid: child.pid as number, port };
}

/** Whether `url`'s `GET /v1/health` answers 200 within a second. */
export async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/v1/health`, { signal: AbortSignal.timeout(1000) })).ok;
  } catch {
    return false;
  }
}

/**
 * Start the daemon and wait until its API answers.
 * @throws Error with its log's tail when it exits first or does not answer within `startTimeoutMs`.
 */
export async function startDaemonProcess(options: DaemonProcessOptions): Promise<DaemonProcess> {
  const log = openSync(options.logFile, 'a');
  const argv = [process.execPath, CLI_MAIN, 'serve', ...options.args];
  const [command, ...args] = options.netns ? inNetns(options.netns, argv) : argv;
  const child: ChildProcess = spawn(command as string, args, { stdio: ['ignore', log, log], env: { ...process.env, ...options.env } });
  closeSync(log);
  let exit: { code: number | null; signal: NodeJS.Signals | null } | null = null;
  const exitedPromise = once(child, 'exit').then(([code, signal]) => {
    exit = { code: code as number | null, signal: signal as NodeJS.Signals | null };
  });
  const logTail = (lines = 20): string => readFileSync(options.logFile, 'utf8').trim().split('\n').slice(-lines).join('\n');
  const signalled = async (signal: NodeJS.Signals): Promise<void> => {
    if (exit) return;
    child.kill(signal);
    await exitedPromise;
  };
  const handle: DaemonProcess = {
    url: options.url,
    pid: child.pid ?? -1,
    exited: () => exit,
    stop: async (graceMs = 30_000) => {
      if (exit) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exitedPromise;
      clearTimeout(timer);
    },
    kill9: () => signalled('SIGKILL'),
    logTail,
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 120_000);
  while (!(await answers(options.url))) {
    if (exit || Date.now() > deadline) {
      await handle.kill9();
      throw new Error(`ramify serve ${options.args.join(' ')} did not answer at ${options.url} (exit ${JSON.stringify(exit)}); its log:\n${logTail()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return handle;
}
