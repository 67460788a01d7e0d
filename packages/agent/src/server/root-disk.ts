/**
 * Growing the root filesystem when the runtime grew the disk under it (a microVM sandbox created with
 * a `diskSizeMB` above its image's): the host resizes the block device (QMP `block_resize`, which the
 * guest kernel hears as a virtio config change), then `setIdentity` carries the size it gave; the agent
 * waits until the kernel sees that size and grows the mounted ext4 online with `resize2fs` (e2fsprogs,
 * part of every minbase root filesystem).
 *
 * The agent remembers the size its root filesystem fills: read when the agent starts (at a microVM's
 * boot the filesystem fills its disk exactly), updated after each growth. Restores carry that memory,
 * so a fork of a grown sandbox does not grow again, and sandboxes at the image's size cost nothing.
 * A root that is not a block device (gVisor) has no disk to grow.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { RamifyError } from '@ramify/contracts';

/** The block device mounted at `/` and its size now. */
export interface RootDisk {
  /** e.g. `/dev/vda`. */
  device: string;
  /** `major:minor`. */
  devNumber: string;
  sizeBytes: number;
}

/** How long to wait for the kernel to see a grown disk, ms. */
const GROWTH_VISIBLE_TIMEOUT_MS = 10_000;
const POLL_MS = 20;

/**
 * The block device mounted at `/` (from `/proc/self/mountinfo` and `/sys/dev/block/M:m/size`), or
 * undefined when `/` is not on a block device (gVisor's gofer or overlay root).
 */
export function readRootDisk(procDir = '/proc', sysDir = '/sys'): RootDisk | undefined {
  let mountinfo: string;
  try {
    mountinfo = readFileSync(`${procDir}/self/mountinfo`, 'utf8');
  } catch {
    return undefined;
  }
  for (const line of mountinfo.split('\n')) {
    // id parent major:minor root mountpoint options [optional...] - fstype source superoptions
    const fields = line.split(' ');
    if (fields[4] !== '/') continue;
    const dash = fields.indexOf('-');
    const source = dash > 0 ? fields[dash + 2] : undefined;
    const devNumber = fields[2];
    if (!source?.startsWith('/dev/') || !devNumber) continue;
    const sizeBytes = deviceSizeBytes(devNumber, sysDir);
    if (sizeBytes !== undefined) return { device: source, devNumber, sizeBytes };
  }
  return undefined;
}

function deviceSizeBytes(devNumber: string, sysDir = '/sys'): number | undefined {
  try {
    const sectors = Number(readFileSync(`${sysDir}/dev/block/${devNumber}/size`, 'utf8').trim());
    return Number.isFinite(sectors) ? sectors * 512 : undefined;
  } catch {
    return undefined;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function runResize2fs(device: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('resize2fs', [device], { timeout: 120_000 }, (err, _stdout, stderr) => {
      if (err) reject(new Error(String(stderr).trim() || err.message));
      else resolve();
    });
  });
}

/**
 * Make the root filesystem on `root` (from {@link readRootDisk}; undefined: nothing to grow) fill a disk
 * the runtime grew to `targetBytes`: wait until the kernel sees the size, then `resize2fs` when it is
 * above `filledBytes` (what the filesystem already fills; when unknown, resize2fs runs, which is a
 * no-op on a filesystem that already fills its disk).
 * @returns the size the filesystem fills afterwards, bytes (unchanged when there was nothing to do).
 * @throws RamifyError RUNTIME_ERROR when the disk does not reach `targetBytes` within 10 s, or resize2fs fails.
 */
export async function growRootFilesystem(targetBytes: number, filledBytes: number | undefined, root: RootDisk | undefined): Promise<number | undefined> {
  if (!root || (filledBytes !== undefined && targetBytes <= filledBytes)) return filledBytes;
  const deadline = Date.now() + GROWTH_VISIBLE_TIMEOUT_MS;
  let size = root.sizeBytes;
  while (size < targetBytes) {
    if (Date.now() >= deadline) {
      throw new RamifyError('RUNTIME_ERROR', `the root disk ${root.device} is ${size} bytes, not the ${targetBytes} the runtime gave it`);
    }
    await sleep(POLL_MS);
    size = deviceSizeBytes(root.devNumber) ?? size;
  }
  try {
    await runResize2fs(root.device);
  } catch (err) {
    throw new RamifyError('RUNTIME_ERROR', `growing the root filesystem on ${root.device} to ${size} bytes failed: ${(err as Error).message}`);
  }
  return size;
}
