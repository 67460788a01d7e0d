/**
 * `setIdentity`: what the agent does after every boot and restore so that forks differ — hostname,
 * fresh entropy in the kernel pool, the wall clock (only when off by more than a second), the
 * sandbox's default environment and id, and its metadata file ({@link METADATA_PATH}). Failures of these
 * system calls are reported, never thrown: a sandbox without CAP_SYS_TIME still works. Last, when the
 * runtime grew the root disk, the root filesystem is grown to fill it (`root-disk.ts`); that failing rejects.
 * No process is started: the hostname goes through procfs or the agent's system-call helper, the clock
 * through the helper (`syscall-helper.ts`); the tools are the fallback. A process costs a gVisor sandbox
 * 100-250 ms and a microVM under TCG far more, on every restore and claim.
 */
import { execFile } from 'node:child_process';
import { mkdir, open, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { hostname as currentHostname } from 'node:os';
import { RamifyError, type AgentIdentity } from '@ramify/contracts';
import type { IdentityReport } from '../protocol/messages.js';
import type { SandboxIdentityState } from './process-table.js';
import { growRootFilesystem, readRootDisk } from './root-disk.js';

/** The clock is corrected only when it is off by more than this many ms. */
export const CLOCK_TOLERANCE_MS = 1000;

/**
 * The sandbox's metadata (the create request's `metadata`, string → string) as a JSON object, written
 * before the sandbox is acknowledged, so its first command can read it; rewritten at every restore.
 */
export const METADATA_PATH = '/run/ramify/metadata.json';

function run(file: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 10_000 }, (err, _stdout, stderr) => {
      if (err) reject(new Error(String(stderr).trim() || err.message));
      else resolve();
    });
  });
}

/**
 * Apply `identity` and record its envs and sandbox id in `state`.
 * @throws RamifyError BAD_REQUEST when the identity is malformed.
 */
export async function applyIdentity(identity: AgentIdentity, state: SandboxIdentityState): Promise<IdentityReport> {
  const arrivedMs = performance.now();
  if (typeof identity?.sandboxId !== 'string' || typeof identity.hostname !== 'string') {
    throw new RamifyError('BAD_REQUEST', 'identity needs sandboxId and hostname strings');
  }
  const envs: Record<string, string> = {};
  for (const [k, v] of Object.entries(identity.envs ?? {})) envs[k] = String(v);
  state.sandboxId = identity.sandboxId;
  state.envs = envs;

  const report: IdentityReport = {
    hostname: { applied: false },
    clock: { adjusted: false, offsetMs: 0 },
    entropy: { bytes: 0 },
  };

  // The clock first, before the spawns below: under load each can take a second, and the host's
  // reading ages while the agent works; the time since the call arrived is added to it.
  const clockMs = identity.clockMs;
  if (typeof clockMs === 'number' && Number.isFinite(clockMs)) {
    const hostNowMs = (): number => clockMs + (performance.now() - arrivedMs);
    const offsetMs = hostNowMs() - Date.now();
    report.clock.offsetMs = offsetMs;
    if (Math.abs(offsetMs) > CLOCK_TOLERANCE_MS) {
      try {
        await setClock(hostNowMs, state);
        report.clock.adjusted = true;
      } catch (err) {
        report.clock.error = (err as Error).message; // EPERM in most sandboxes: ignored.
      }
    }
  }

  if (identity.hostname && identity.hostname !== currentHostname()) {
    try {
      await setHostname(identity.hostname, state);
      report.hostname.applied = true;
    } catch (err) {
      report.hostname.error = (err as Error).message;
    }
  } else {
    report.hostname.applied = identity.hostname !== '';
  }

  const entropy = identity.entropy;
  if (entropy instanceof Uint8Array && entropy.byteLength > 0) {
    try {
      const fh = await open('/dev/urandom', 'w');
      try {
        await fh.write(entropy);
      } finally {
        await fh.close();
      }
      report.entropy.bytes = entropy.byteLength;
    } catch (err) {
      report.entropy.error = (err as Error).message;
    }
  }

  if (identity.metadata !== undefined) {
    try {
      await writeMetadata(identity.metadata);
    } catch (err) {
      report.metadata = { error: (err as Error).message };
    }
  }

  if (typeof identity.rootDiskBytes === 'number' && Number.isFinite(identity.rootDiskBytes)) {
    // Unlike the rest, a failure here fails the call: the sandbox would not have the disk it asked for.
    state.rootFilesystemBytes = await growRootFilesystem(identity.rootDiskBytes, state.rootFilesystemBytes, readRootDisk());
  }
  return report;
}

/**
 * sethostname(2): through procfs (a Linux guest accepts the write; gVisor answers EIO), else through the
 * system-call helper, else with the `hostname` tool (a process).
 */
async function setHostname(name: string, state: SandboxIdentityState): Promise<void> {
  try {
    await writeFile('/proc/sys/kernel/hostname', name);
    if (currentHostname() === name) return;
  } catch {
    // Refused or absent: the helper or the tool below.
  }
  const failed = await state.syscalls?.setHostname(name);
  if (failed === null && currentHostname() === name) return;
  await run('hostname', [name]);
}

/** clock_settime(2) to `hostNowMs()`: through the system-call helper, else with `date` (a process). */
async function setClock(hostNowMs: () => number, state: SandboxIdentityState): Promise<void> {
  const failed = await state.syscalls?.setClock(hostNowMs());
  if (failed === null) return;
  await run('date', ['-u', '-s', `@${(hostNowMs() / 1000).toFixed(3)}`]);
}

/** Replace {@link METADATA_PATH} with `metadata` (a new file renamed over the old: readers never see half of it). */
async function writeMetadata(metadata: Record<string, string>): Promise<void> {
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(metadata)) clean[k] = String(v);
  await mkdir(dirname(METADATA_PATH), { recursive: true });
  const partial = `${METADATA_PATH}.${process.pid}.tmp`;
  await writeFile(partial, `${JSON.stringify(clean)}\n`, { mode: 0o644 });
  await rename(partial, METADATA_PATH);
}
