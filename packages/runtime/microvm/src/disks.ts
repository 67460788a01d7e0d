/**
 * The guest's root disk. A template's rootfs directory becomes a read-only raw ext4 *base* once
 * (`mkfs.ext4 -d`, kept under `<basesDir>/<key>.ext4`, never rebuilt while it exists: images refer to
 * it by path). Every running VM writes a qcow2 overlay:
 *
 *   booted VM:   base ← run/overlay.qcow2
 *   restored VM: base ← run/lower.qcow2 (a link or copy of the image's frozen disk) ← run/overlay.qcow2
 *
 * A checkpoint freezes the VM's disk into one qcow2 whose only backing file is the base, so an image
 * never depends on another image (pause images are deleted independently of each other).
 *
 * Disk size per sandbox: the base is made at the daemon's `diskSizeMB`; a restore asked for more grows
 * the running VM's overlay with QMP `block_resize` (the guest kernel hears a virtio config change; the
 * agent then grows the ext4 online). A checkpoint's `qemu-img commit` grows the frozen disk with it, so
 * the image keeps the size. Disks grow, never shrink.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, copyFile, link, mkdir, realpath, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RamifyError } from '@ramify/contracts';
import { runChecked } from './host-tools.js';

/** A base disk: the path images record, and what it was made from. */
export interface BaseDisk {
  path: string;
  rootfsDir: string;
  sizeMB: number;
}

const BASE_RECIPE = 'ext4-nojournal-v2';
/**
 * Fixed filesystem timestamps (e2fsprogs' test hook): with the fixed UUID and hash seed, the same
 * rootfs directory on the same host gives a bit-identical base, so a lost base can be rebuilt.
 */
const MKFS_TIME = 1_700_000_000;
const building = new Map<string, Promise<BaseDisk>>();

/**
 * The base disk of `rootfsDir` with a `sizeMB` ext4 filesystem, made on first use (a few seconds per
 * 100 MB of files). Concurrent calls share one build. Rejects `RUNTIME_UNAVAILABLE` without
 * e2fsprogs, `RUNTIME_ERROR` when mkfs fails (e.g. the files do not fit in `sizeMB`).
 */
export async function ensureBaseDisk(rootfsDir: string, options: { basesDir: string; sizeMB: number }): Promise<BaseDisk> {
  const source = await realpath(rootfsDir).catch(() => {
    throw new RamifyError('RUNTIME_ERROR', `the template's root filesystem ${rootfsDir} does not exist`);
  });
  const key = createHash('sha256').update(`${BASE_RECIPE}\0${source}\0${options.sizeMB}`).digest('hex').slice(0, 32);
  const path = join(options.basesDir, `${key}.ext4`);
  const base: BaseDisk = { path, rootfsDir: source, sizeMB: options.sizeMB };
  if (existsSync(path)) return base;
  let pending = building.get(path);
  if (!pending) {
    pending = buildBase(base, key).finally(() => building.delete(path));
    building.set(path, pending);
  }
  return pending;
}

async function buildBase(base: BaseDisk, key: string): Promise<BaseDisk> {
  await mkdir(join(base.path, '..'), { recursive: true });
  const tmp = `${base.path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const uuid = [key.slice(0, 8), key.slice(8, 12), `4${key.slice(13, 16)}`, `8${key.slice(17, 20)}`, key.slice(20, 32)].join('-');
  try {
    await writeFile(tmp, '');
    // No journal (a checkpoint captures RAM and disk at one instant; a killed VM's disk is discarded),
    // inode tables initialised now (else every VM would zero them into its own overlay), fixed UUID,
    // seed and time.
    await runChecked([
      'mkfs.ext4', '-q', '-F', '-t', 'ext4', '-b', '4096', '-m', '0', '-L', 'ramify-root', '-U', uuid,
      '-O', '^has_journal', '-E', `lazy_itable_init=0,lazy_journal_init=0,root_owner=0:0,hash_seed=${uuid}`,
      '-d', base.rootfsDir, tmp, `${base.sizeMB}M`,
    ], { env: { E2FSPROGS_FAKE_TIME: String(MKFS_TIME) } });
    await chmod(tmp, 0o444);
    await writeFile(`${base.path}.json`, JSON.stringify({ rootfsDir: base.rootfsDir, sizeMB: base.sizeMB, recipe: BASE_RECIPE }, null, 1));
    await rename(tmp, base.path);
    return base;
  } finally {
    await rm(tmp, { force: true });
  }
}

/** Create `overlay` (qcow2) on `backing` (raw or qcow2). Rejects `RUNTIME_ERROR` when the backing chain is missing. */
export async function createOverlay(qemuImg: string, overlay: string, backing: { path: string; format: 'raw' | 'qcow2' }): Promise<void> {
  if (!existsSync(backing.path)) throw new RamifyError('RUNTIME_ERROR', `disk ${backing.path} is missing`);
  await runChecked([qemuImg, 'create', '-q', '-f', 'qcow2', '-F', backing.format, '-b', backing.path, overlay]);
}

/** QEMU's device id of the root disk's drive (`-drive id=disk0`), the name `block_resize` takes. */
export const ROOT_DRIVE_ID = 'disk0';

const MiB = 1024 * 1024;

/** Most a sandbox's root disk may grow to, MiB (sparse: only what the guest writes costs host disk). */
export const MAX_DISK_SIZE_MB = 262_144;

/**
 * The virtual size of a disk image, bytes (`qemu-img info`).
 * @throws RamifyError RUNTIME_ERROR when qemu-img cannot read it.
 */
export async function diskVirtualSizeBytes(qemuImg: string, path: string): Promise<number> {
  const out = await runChecked([qemuImg, 'info', '--output=json', '-U', path]);
  const size = (JSON.parse(out) as { 'virtual-size'?: unknown })['virtual-size'];
  if (typeof size !== 'number') throw new RamifyError('RUNTIME_ERROR', `qemu-img info ${path} gave no virtual size`);
  return size;
}

/**
 * Check a sandbox's disk size against its image's disk: below it is refused (a disk cannot shrink).
 * @returns the size in bytes to grow to, or null when the image's disk already has it.
 * @throws RamifyError VALIDATION_FAILED below the image's size or above {@link MAX_DISK_SIZE_MB}.
 */
export function diskGrowth(diskSizeMB: number, imageDiskBytes: number, source: string): number | null {
  const wanted = diskSizeMB * MiB;
  if (wanted < imageDiskBytes) {
    throw new RamifyError('VALIDATION_FAILED', `diskSizeMB ${diskSizeMB} is below the ${imageDiskBytes / MiB} MiB disk of the microVM ${source}: a disk can grow, not shrink`, { field: 'diskSizeMB' });
  }
  if (diskSizeMB > MAX_DISK_SIZE_MB) {
    throw new RamifyError('VALIDATION_FAILED', `diskSizeMB ${diskSizeMB} is above the microVM most, ${MAX_DISK_SIZE_MB} MiB`, { field: 'diskSizeMB' });
  }
  return wanted > imageDiskBytes ? wanted : null;
}

/** Hard-link `from` to `to`, or copy when they are on different filesystems. */
export async function linkOrCopy(from: string, to: string): Promise<void> {
  try {
    await link(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV' && (err as NodeJS.ErrnoException).code !== 'EPERM') throw err;
    await copyFile(from, to);
  }
}

/** Move `from` to `to` (a copy keeping holes when they are on different filesystems). */
export async function moveFile(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    await copySparse(from, to);
    await rm(from, { force: true });
  }
}

/** Copy `from` to `to` keeping holes (`cp --sparse=always`). Rejects `RUNTIME_ERROR` when cp fails. */
export async function copySparse(from: string, to: string): Promise<void> {
  await runChecked(['cp', '--sparse=always', from, to]);
}

/**
 * Freeze a stopped VM's disk into `target`, a qcow2 whose backing file is the base:
 * without `lower`, the overlay itself is moved; with it, a copy of `lower` receives the overlay's
 * clusters (`qemu-img commit`), which costs what the VM wrote since its restore.
 */
export async function freezeDisk(qemuImg: string, disk: { overlay: string; lower: string | null }, target: string): Promise<void> {
  if (!disk.lower) {
    await moveFile(disk.overlay, target);
    return;
  }
  await copyFile(disk.lower, target);
  await runChecked([qemuImg, 'rebase', '-u', '-f', 'qcow2', '-F', 'qcow2', '-b', target, disk.overlay]);
  await runChecked([qemuImg, 'commit', '-q', '-f', 'qcow2', disk.overlay]);
  await rm(disk.overlay, { force: true });
}
