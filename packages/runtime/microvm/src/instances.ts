/**
 * Per-sandbox instance directories under `<workDir>/run/<sandboxId>/` and the QEMU processes that
 * belong to them. The directory is the source of truth after a daemon restart: `instance.json` says
 * how the VM was started, and every QEMU process of the instance names a socket inside the directory
 * on its command line, which is how stray processes (a loader, a VM whose pid was never recorded) are
 * found again.
 */
import { mkdir, readFile, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { RamifyError } from '@ramify/contracts';
import { writeJsonAtomically, type InstanceRecord } from './image-files.js';
import { isQemuOf, killPid, waitGone } from './qemu-process.js';

/** File names inside an instance directory. */
export const RUN_FILES = {
  instance: 'instance.json',
  ram: 'ram',
  overlay: 'overlay.qcow2',
  lower: 'lower.qcow2',
  /** A fork point's copy of the overlay, taken while the VM was stopped. */
  forkOverlay: 'fork-overlay.qcow2',
  initrd: 'initrd.img',
  console: 'console.log',
  qemuLog: 'qemu.log',
  qmp: 'qmp.sock',
  agent: 'agent.sock',
  migrateIn: 'migrate-in.sock',
  migrateOut: 'migrate-out.sock',
  migrateLocal: 'migrate-local.sock',
  loaderQmp: 'loader-qmp.sock',
  loaderLog: 'loader.log',
  loaderConsole: 'loader-console.log',
} as const;

/** Longest unix socket path Linux accepts (sun_path is 108 bytes with the NUL). */
const MAX_SOCKET_PATH = 107;

export class InstanceDirs {
  constructor(readonly runRoot: string) {}

  dir(sandboxId: string): string {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(sandboxId)) throw new RamifyError('BAD_REQUEST', `sandbox id '${sandboxId}' is not a safe directory name`);
    return join(this.runRoot, sandboxId);
  }

  file(sandboxId: string, name: keyof typeof RUN_FILES): string {
    return join(this.dir(sandboxId), RUN_FILES[name]);
  }

  /** Create the directory; rejects `RUNTIME_ERROR` when its socket paths would be too long for unix sockets. */
  async create(sandboxId: string): Promise<string> {
    const longest = this.file(sandboxId, 'migrateLocal');
    if (Buffer.byteLength(longest) > MAX_SOCKET_PATH) {
      throw new RamifyError('RUNTIME_ERROR', `the microVM work directory is too deep for unix sockets (${longest} is over ${MAX_SOCKET_PATH} bytes); use a shorter workDir`);
    }
    const dir = this.dir(sandboxId);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  async read(sandboxId: string): Promise<InstanceRecord | null> {
    try {
      return JSON.parse(await readFile(this.file(sandboxId, 'instance'), 'utf8')) as InstanceRecord;
    } catch {
      return null;
    }
  }

  async write(record: InstanceRecord): Promise<void> {
    await writeJsonAtomically(this.file(record.sandboxId, 'instance'), record);
  }

  /** Sandbox ids that have a directory (running, stopped or half-made). */
  async ids(): Promise<string[]> {
    return (await readdir(this.runRoot, { withFileTypes: true }).catch(() => [])).filter((e) => e.isDirectory()).map((e) => e.name).sort();
  }

  /** Pids of live QEMU processes whose argv names a path in this instance's directory. */
  async processes(sandboxId: string): Promise<number[]> {
    const marker = this.dir(sandboxId) + '/';
    const pids: number[] = [];
    for (const name of await readdir('/proc').catch(() => [] as string[])) {
      if (!/^\d+$/.test(name)) continue;
      const pid = Number(name);
      if (pid !== process.pid && (await isQemuOf(pid, marker))) pids.push(pid);
    }
    return pids;
  }

  /** SIGKILL every QEMU process of the instance and wait (bounded) until they are gone. */
  async killProcesses(sandboxId: string): Promise<void> {
    const pids = await this.processes(sandboxId);
    for (const pid of pids) killPid(pid);
    for (const pid of pids) await waitGone(pid, 5000);
  }

  /** Kill the instance's processes and delete its directory; a no-op when absent. */
  async destroy(sandboxId: string): Promise<void> {
    await this.killProcesses(sandboxId);
    await rm(this.dir(sandboxId), { recursive: true, force: true });
  }
}
