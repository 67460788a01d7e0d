/**
 * Host-side lookups and cleanup of the microVM runtime's QEMU processes for the conformance suite.
 *
 * Every QEMU process of a daemon names files of its instance directory
 * `<dataDir>/runtime/microvm/run/<sandboxId>/` on its command line (QMP socket, disk, console), and it
 * runs inside the sandbox's network namespace (`<prefix>-s<slot>`). QEMU is detached and outlives the
 * daemon, so the harness finds its leftovers by command line (its own data dir) or by namespace (an
 * earlier aborted run with the same prefix) and SIGKILLs them. Only `qemu-system-*` processes are
 * touched. Everything here reads `/proc` directly (no `ps`).
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** Where a daemon keeps its microVM instances: `<dataDir>/runtime/microvm/run`. */
export const microvmRunDir = (dataDir: string): string => join(dataDir, 'runtime', 'microvm', 'run');

/** One live QEMU process: its pid and argv. */
export interface QemuProcess {
  pid: number;
  argv: string[];
}

/** Every live (non-zombie) `qemu-system-*` process on the host. Synchronous: usable from an exit hook. */
export function listQemuProcesses(): QemuProcess[] {
  const out: QemuProcess[] = [];
  let names: string[] = [];
  try {
    names = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
      if (!/(^|\/)qemu-system-/.test(argv[0] ?? '')) continue;
      if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${name}/stat`, 'utf8'))) continue;
      out.push({ pid: Number(name), argv });
    } catch {
      // The process exited while we looked.
    }
  }
  return out;
}

/** QEMU processes whose command line contains `marker` (e.g. a data directory). Synchronous. */
export function qemuProcessesNaming(marker: string): QemuProcess[] {
  return listQemuProcesses().filter((p) => p.argv.some((a) => a.includes(marker)));
}

/** Inode of a network namespace file, or null. */
function nsInode(path: string): number | null {
  try {
    return statSync(path).ino;
  } catch {
    return null;
  }
}

/** The named namespace (`ip netns` name under /run/netns) `pid` lives in, or null. */
export function namespaceOfPid(pid: number): string | null {
  const ino = nsInode(`/proc/${pid}/ns/net`);
  if (ino === null) return null;
  let names: string[] = [];
  try {
    names = readdirSync('/run/netns');
  } catch {
    return null;
  }
  return names.find((n) => nsInode(`/run/netns/${n}`) === ino) ?? null;
}

/** QEMU processes living in a `<prefix>-*` network namespace. Synchronous. */
export function qemuProcessesInNamespaces(prefix: string): QemuProcess[] {
  return listQemuProcesses().filter((p) => namespaceOfPid(p.pid)?.startsWith(`${prefix}-`) ?? false);
}

/** SIGKILL `pids` (ignoring ones already gone). Synchronous: usable from an exit or signal hook. */
export function killPidsSync(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** Wait until every pid is gone or a zombie, at most `timeoutMs` in all. Resolves the pids still alive. */
export async function waitPidsGone(pids: readonly number[], timeoutMs = 10_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let left = [...pids];
  while (left.length > 0 && Date.now() < deadline) {
    const alive: number[] = [];
    for (const pid of left) {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      if (stat && !/^\d+ \(.*\) Z/.test(stat)) alive.push(pid);
    }
    left = alive;
    if (left.length > 0) await sleep(20);
  }
  return left;
}

/**
 * SIGKILL every QEMU process whose command line names `dataDir` or that lives in a `<prefix>-*`
 * namespace, and wait (bounded) until they are gone. Resolves the pids that were killed.
 */
export async function removeQemuProcesses(opts: { dataDir?: string; prefix?: string }): Promise<number[]> {
  const pids = new Set<number>();
  if (opts.dataDir) for (const p of qemuProcessesNaming(`${opts.dataDir}/`)) pids.add(p.pid);
  if (opts.prefix) for (const p of qemuProcessesInNamespaces(opts.prefix)) pids.add(p.pid);
  killPidsSync([...pids]);
  await waitPidsGone([...pids]);
  return [...pids];
}

/**
 * The sandbox's VM process (not a checkpoint loader): the QEMU whose QMP socket is
 * `<dataDir>/runtime/microvm/run/<sandboxId>/qmp.sock`. Null when none runs.
 */
export function sandboxQemuProcess(dataDir: string, sandboxId: string): QemuProcess | null {
  const qmp = `${join(microvmRunDir(dataDir), sandboxId)}/qmp.sock`;
  return listQemuProcesses().find((p) => p.argv.some((a) => a.startsWith(`unix:${qmp},`))) ?? null;
}

/** The `instance.json` record of a microVM sandbox (the runtime's own file), or null when absent. */
export async function readMicrovmInstance(dataDir: string, sandboxId: string): Promise<{ ready?: boolean; checkpoint?: unknown } | null> {
  try {
    return JSON.parse(await readFile(join(microvmRunDir(dataDir), sandboxId, 'instance.json'), 'utf8')) as { ready?: boolean; checkpoint?: unknown };
  } catch {
    return null;
  }
}

/** Sandbox ids that have a microVM instance directory under the daemon's data dir. */
export function microvmInstanceIds(dataDir: string): string[] {
  try {
    return readdirSync(microvmRunDir(dataDir), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  } catch {
    return [];
  }
}
