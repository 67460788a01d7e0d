/**
 * Starting and stopping QEMU processes. QEMU starts inside the sandbox's network namespace
 * (`nsenter --net=<path>`, which execs QEMU in place, so the pid is QEMU's), in its own session with
 * stdout/stderr appended to a log file, and is not waited for: it outlives the daemon. A pid is only
 * trusted while `/proc/<pid>/cmdline` still names the instance's QMP socket (pids are reused).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { RamifyError } from '@ramify/contracts';
import { QmpClient } from './qmp.js';
import { tail } from './host-tools.js';

export interface QemuSpawn {
  qemuPath: string;
  args: string[];
  /** Network namespace to start in; null = the daemon's own. */
  netnsPath: string | null;
  /** QEMU's stdout/stderr (appended). */
  logFile: string;
  /** The QMP socket in `args`: readiness is QMP answering. */
  qmpSocket: string;
  /** How long QEMU may take to answer QMP. */
  readyTimeoutMs: number;
  /** Launcher argv put in front of everything (it must exec the rest in place), e.g. {@link discardGuardArgv}. */
  launcher?: readonly string[];
}

export interface StartedQemu {
  pid: number;
  qmp: QmpClient;
}

/**
 * Spawn QEMU detached and connect to its QMP socket. Rejects `RUNTIME_UNAVAILABLE` when QEMU (or
 * nsenter) cannot be executed, `RUNTIME_ERROR` with the tail of QEMU's log when it exits or does not
 * answer in time (the process is killed then).
 */
export async function startQemu(spec: QemuSpawn): Promise<StartedQemu> {
  const qemu = spec.netnsPath ? ['nsenter', `--net=${spec.netnsPath}`, '--', spec.qemuPath, ...spec.args] : [spec.qemuPath, ...spec.args];
  const argv = [...(spec.launcher ?? []), ...qemu];
  const log = await open(spec.logFile, 'a');
  let exited: string | null = null;
  let pid: number;
  try {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', log.fd, log.fd], detached: true });
    pid = await new Promise<number>((resolve, reject) => {
      child.once('error', (e) => reject(new RamifyError('RUNTIME_UNAVAILABLE', `cannot start ${argv[0]}: ${e.message}`)));
      child.once('spawn', () => resolve(child.pid!));
    });
    child.once('exit', (code, signal) => (exited = signal ? `killed by ${signal}` : `exit ${code}`));
    child.unref();
  } finally {
    await log.close();
  }
  const deadline = Date.now() + spec.readyTimeoutMs;
  for (;;) {
    if (exited !== null || !isAlive(pid)) break;
    if (existsSync(spec.qmpSocket)) {
      try {
        return { pid, qmp: await QmpClient.connect(spec.qmpSocket, Math.max(1000, deadline - Date.now())) };
      } catch {
        break;
      }
    }
    if (Date.now() > deadline) break;
    await sleep(10);
  }
  killPid(pid);
  const logText = await readFile(spec.logFile, 'utf8').catch(() => '');
  throw new RamifyError('RUNTIME_ERROR', `QEMU ${exited ? `exited (${exited})` : 'did not answer on QMP'} while starting: ${tail(logText, 6) || 'no output'}`);
}

/** True while `pid` exists and is not a zombie. */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return true;
}

/** True when `pid` is a live QEMU whose argv contains `marker` (guards against pid reuse). */
export async function isQemuOf(pid: number, marker: string): Promise<boolean> {
  if (!isAlive(pid)) return false;
  const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
  if (!/(^|\/)qemu-system-/.test(argv[0] ?? '')) return false;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  if (/^\d+ \(.*\) Z/.test(stat)) return false;
  return argv.some((a) => a.includes(marker));
}

/** SIGKILL `pid`, ignoring a pid that is already gone. */
export function killPid(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

/** Wait until `pid` is gone (or a zombie), at most `timeoutMs`; true when it is. */
export async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    if (!stat || /^\d+ \(.*\) Z/.test(stat)) return true;
    if (Date.now() > deadline) return false;
    await sleep(10);
  }
}
