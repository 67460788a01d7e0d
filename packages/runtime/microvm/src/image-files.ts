/**
 * On-disk records of the microVM runtime.
 *
 * An *image* (a checkpoint) is a directory:
 * ```
 * ram          guest RAM, a sparse file of the machine's memoryMB MiB (forks map it copy-on-write)
 * state        device state (QEMU migration stream with x-ignore-shared: no RAM pages), 0.1-1 MB
 * disk.qcow2   the frozen disk; its only backing file is the template's base disk
 * microvm.json {@link ImageManifest}, written last: an image without it is incomplete
 * ```
 * An *instance* (a running or stopped VM of one sandbox) is `<runDir>/<sandboxId>/` with
 * `instance.json` ({@link InstanceRecord}), its disk overlay, sockets, console and QEMU logs.
 */
import { open, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RamifyError } from '@ramify/contracts';
import type { SandboxResources } from '@ramify/core';
import type { MachineConfig } from './qemu-argv.js';

/** 2: every VM has a virtio balloon (an image of format 1 does not load into today's device set). */
export const IMAGE_FORMAT_VERSION = 2;
export const IMAGE_FILES = { ram: 'ram', state: 'state', disk: 'disk.qcow2', manifest: 'microvm.json' } as const;

export interface ImageManifest {
  formatVersion: number;
  machine: MachineConfig;
  /** Absolute path of the base disk `disk.qcow2` is backed by. */
  baseDisk: string;
  /** Guest kernel release that was booted (informational). */
  guestKernel: string;
  /**
   * QEMU major.minor that made the image (`qemuRelease`). Only that release restores it: QEMU keeps
   * migration compatible across releases for versioned machine types, and the microVM's own device
   * state is not promised to be. Absent in images made before the stamp, all by QEMU 7.2.
   */
  qemu?: string;
  createdAt: string;
}

/** fsync each of `paths` (files or directories), so what they hold survives a host crash. */
export async function syncPaths(paths: readonly string[]): Promise<void> {
  await Promise.all(
    paths.map(async (path) => {
      const handle = await open(path, 'r');
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    }),
  );
}

/** Write `data` as JSON to `path` atomically (temp file + rename). */
export async function writeJsonAtomically(path: string, data: unknown): Promise<void> {
  const tmp = `${path}.tmp`;
  await writeFile(tmp, JSON.stringify(data, null, 1));
  await rename(tmp, path);
}

/**
 * Read an image's manifest. Rejects `RUNTIME_ERROR` when it is missing (not a microVM image, or an
 * incomplete one) or of another format version.
 */
export async function readImageManifest(imageDir: string): Promise<ImageManifest> {
  let manifest: ImageManifest;
  try {
    manifest = JSON.parse(await readFile(join(imageDir, IMAGE_FILES.manifest), 'utf8')) as ImageManifest;
  } catch {
    throw new RamifyError('RUNTIME_ERROR', `${imageDir} is not a complete microVM image (no ${IMAGE_FILES.manifest}; was it made by another runtime?)`);
  }
  if (manifest.formatVersion !== IMAGE_FORMAT_VERSION) {
    throw new RamifyError('RUNTIME_ERROR', `microVM image ${imageDir} has format ${manifest.formatVersion}; this runtime reads ${IMAGE_FORMAT_VERSION} (rebuild the template, or take the snapshot again, with this version)`);
  }
  return manifest;
}

/** A checkpoint in progress, recorded so that a restarted daemon can finish or undo it. */
export interface CheckpointMarker {
  imageDir: string;
  /** `migrating`: QEMU is writing state (undo if the daemon died); `files`: QEMU is done, only file moves remain. */
  phase: 'migrating' | 'files';
  /** pid of the loader QEMU that materializes a copy-on-write VM's RAM, if one runs. */
  loaderPid?: number;
  /** A fork point (`checkpointKeepRunning`): the VM goes on running; its disk is frozen from a copy. */
  keepRunning?: boolean;
}

export interface InstanceRecord {
  sandboxId: string;
  pid: number;
  netnsPath: string;
  /** The VM's machine (the image's, for a restored VM). */
  machine: MachineConfig;
  /** The sandbox's own limits within `machine` (balloon target, CPU quota); absent in records of older versions. */
  limits?: SandboxResources;
  /** `shared`: QEMU writes RAM to `<run>/ram`; `private`: copy-on-write mapping of `imageRam`. */
  ram: 'shared' | 'private';
  /** The image RAM file mapped by a restored VM. */
  imageRam: string | null;
  baseDisk: string;
  /** `<run>/lower.qcow2` exists (restored VM). */
  hasLower: boolean;
  /** False from spawn until the boot or restore finished: a VM left unready by a dead daemon counts as stopped. */
  ready: boolean;
  checkpoint?: CheckpointMarker;
}

/** QEMU release of images made before the stamp (`ImageManifest.qemu`): bookworm's, the only one used then. */
const UNSTAMPED_QEMU_RELEASE = '7.2';

/**
 * Refuse an image made by another QEMU release, before anything starts.
 * @throws RamifyError `IMAGE_INCOMPATIBLE` (409); the image is kept.
 */
export function assertSameQemu(manifest: ImageManifest, hostRelease: string, hostVersionLine: string): void {
  const made = manifest.qemu ?? UNSTAMPED_QEMU_RELEASE;
  if (made === hostRelease) return;
  throw new RamifyError(
    'IMAGE_INCOMPATIBLE',
    `this image was made by QEMU ${made} and this host runs ${hostVersionLine}, which cannot restore it (a microVM's migration state is only read by the release that wrote it): rebuild a template image with \`ramify template build <spec>\`; a paused sandbox resumes on a host with QEMU ${made} (the image is kept)`,
    { imageRuntime: `QEMU ${made}`, hostRuntime: hostVersionLine },
  );
}
