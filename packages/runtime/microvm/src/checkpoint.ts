/**
 * Checkpointing a VM into an image directory (layout in image-files.ts).
 *
 * A VM whose RAM is a shared file mapping (a booted VM) is checkpointed as in RUNTIME-QEMU.md: QMP
 * `stop`, `x-ignore-shared`, migrate the device state only, quit, and the RAM file *becomes* the image's
 * memory (a rename). A restored VM maps its image's RAM privately (copy-on-write, so forks share
 * pages); QEMU cannot leave private RAM out of a migration, so its RAM is *materialized*: a loader
 * QEMU with the same machine, whose RAM is a shared mapping of the new image's RAM file, receives a
 * full local migration (zero pages stay holes), then saves the device state like a booted VM. Either
 * way the image is RAM file + small state + frozen disk, and every restore maps it copy-on-write.
 *
 * Progress is recorded in the instance (`checkpoint` marker) so a restarted daemon can undo a
 * checkpoint QEMU had not finished, or finish one whose file moves were interrupted.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { RamifyError, isRamifyError } from '@ramify/contracts';
import { freezeDisk, moveFile } from './disks.js';
import { removeGuestLink } from './guest-link.js';
import { IMAGE_FILES, IMAGE_FORMAT_VERSION, writeJsonAtomically, type ImageManifest, type InstanceRecord } from './image-files.js';
import { sinkToFile } from './migration-stream.js';
import { digZeroPages } from './sparse-ram.js';
import { isQemuOf, killPid, waitGone } from './qemu-process.js';
import { QmpClient, waitForMigration } from './qmp.js';
import { startLoader, type VmEnvironment } from './vm-environment.js';

/** Bound on each migration (device state, or a full local RAM transfer under load). */
const MIGRATION_TIMEOUT_MS = 180_000;

/** Checkpoint the instance `inst` into `imageDir` (created). The VM is gone afterwards. @returns allocated bytes of the image. */
export async function checkpointInstance(env: VmEnvironment, inst: InstanceRecord, imageDir: string): Promise<number> {
  const dir = env.dirs.dir(inst.sandboxId);
  if (!(await isQemuOf(inst.pid, dir + '/'))) throw new RamifyError('RUNTIME_ERROR', `microVM '${inst.sandboxId}' is not running`);
  await mkdir(imageDir, { recursive: true });
  let record: InstanceRecord = { ...inst, checkpoint: { imageDir, phase: 'migrating' } };
  await env.dirs.write(record);
  const qmp = await QmpClient.connect(env.dirs.file(inst.sandboxId, 'qmp'));
  let loader: Awaited<ReturnType<typeof startLoader>> | null = null;
  try {
    await qmp.execute('stop');
    if (inst.ram === 'shared') {
      await saveDeviceState(qmp, env.dirs.file(inst.sandboxId, 'migrateOut'), join(imageDir, IMAGE_FILES.state));
    } else {
      loader = await startLoader(env, inst, join(imageDir, IMAGE_FILES.ram));
      record = { ...record, checkpoint: { imageDir, phase: 'migrating', loaderPid: loader.pid } };
      await env.dirs.write(record);
      const local = `unix:${env.dirs.file(inst.sandboxId, 'migrateLocal')}`;
      // The restore turned x-ignore-shared on; both ends of this migration must have it off.
      await qmp.execute('migrate-set-capabilities', { capabilities: [{ capability: 'x-ignore-shared', state: false }] });
      await loader.qmp.execute('migrate-incoming', { uri: local });
      await qmp.execute('migrate', { uri: local });
      await waitForMigration(qmp, 'copying RAM to the image', MIGRATION_TIMEOUT_MS);
      await waitForMigration(loader.qmp, 'loading RAM into the image', MIGRATION_TIMEOUT_MS);
      await saveDeviceState(loader.qmp, env.dirs.file(inst.sandboxId, 'migrateOut'), join(imageDir, IMAGE_FILES.state));
    }
  } catch (err) {
    if (loader) await quit(loader.qmp, loader.pid);
    await rm(imageDir, { recursive: true, force: true });
    await qmp.execute('cont').catch(() => undefined);
    qmp.close();
    await env.dirs.write({ ...inst, checkpoint: undefined });
    throw isRamifyError(err) ? err : new RamifyError('RUNTIME_ERROR', `checkpoint of microVM '${inst.sandboxId}' failed: ${(err as Error).message}`);
  }
  record = { ...inst, checkpoint: { imageDir, phase: 'files' } };
  await env.dirs.write(record);
  if (loader) await quit(loader.qmp, loader.pid);
  await quit(qmp, inst.pid);
  await finishCheckpointFiles(env, record);
  return allocatedBytes(imageDir);
}

/** Set `x-ignore-shared` and migrate the (stopped) VM's device state into `stateFile`. */
async function saveDeviceState(qmp: QmpClient, socketPath: string, stateFile: string): Promise<void> {
  await qmp.execute('migrate-set-capabilities', { capabilities: [{ capability: 'x-ignore-shared', state: true }] });
  const sink = await sinkToFile(socketPath, stateFile);
  try {
    await qmp.execute('migrate', { uri: sink.uri });
    await waitForMigration(qmp, 'saving the device state', MIGRATION_TIMEOUT_MS);
    await sink.written;
  } finally {
    await sink.close();
  }
}

/** Ask QEMU to quit, then make sure the process is gone (SIGKILL after 10 s). */
async function quit(qmp: QmpClient, pid: number): Promise<void> {
  await qmp.execute('quit').catch(() => undefined);
  qmp.close();
  if (!(await waitGone(pid, 10_000))) {
    killPid(pid);
    await waitGone(pid, 5000);
  }
}

/**
 * The file half of a checkpoint, after QEMU wrote the state and quit: move the RAM file (booted VM)
 * and turn its all-zero pages into holes, freeze the disk, write the manifest last, delete the
 * instance. Safe to repeat after an interruption.
 */
export async function finishCheckpointFiles(env: VmEnvironment, inst: InstanceRecord): Promise<void> {
  const imageDir = inst.checkpoint!.imageDir;
  const ram = env.dirs.file(inst.sandboxId, 'ram');
  if (inst.ram === 'shared' && existsSync(ram)) await moveFile(ram, join(imageDir, IMAGE_FILES.ram));
  // A booted guest leaves zero-filled pages behind, many of them in the balloon (the guest gave them
  // up): holes read the same and cost no disk. (A loader-made RAM file never gets zero pages written.)
  if (inst.ram === 'shared' && existsSync(join(imageDir, IMAGE_FILES.ram))) await digZeroPages(env.perlPath, join(imageDir, IMAGE_FILES.ram));
  const overlay = env.dirs.file(inst.sandboxId, 'overlay');
  if (existsSync(overlay)) {
    await freezeDisk(env.qemuImgPath, { overlay, lower: inst.hasLower ? env.dirs.file(inst.sandboxId, 'lower') : null }, join(imageDir, IMAGE_FILES.disk));
  }
  for (const name of [IMAGE_FILES.ram, IMAGE_FILES.state, IMAGE_FILES.disk]) {
    if (!existsSync(join(imageDir, name))) throw new RamifyError('RUNTIME_ERROR', `checkpoint of microVM '${inst.sandboxId}' left no ${name} in ${imageDir}`);
  }
  const manifest: ImageManifest = {
    formatVersion: IMAGE_FORMAT_VERSION,
    machine: inst.machine,
    baseDisk: inst.baseDisk,
    guestKernel: env.kernel.version,
    createdAt: new Date().toISOString(),
  };
  await writeJsonAtomically(join(imageDir, IMAGE_FILES.manifest), manifest);
  await env.dirs.destroy(inst.sandboxId);
  await removeGuestLink(inst.netnsPath);
}

/**
 * Undo a checkpoint that QEMU had not finished when the previous daemon died: stop the loader, delete
 * the partial image, and let the VM run again if it is still there.
 */
export async function undoCheckpoint(env: VmEnvironment, inst: InstanceRecord): Promise<void> {
  const marker = inst.checkpoint!;
  const dir = env.dirs.dir(inst.sandboxId) + '/';
  if (marker.loaderPid && (await isQemuOf(marker.loaderPid, dir))) {
    killPid(marker.loaderPid);
    await waitGone(marker.loaderPid, 5000);
  }
  await rm(marker.imageDir, { recursive: true, force: true });
  if (await isQemuOf(inst.pid, dir)) {
    const qmp = await QmpClient.connect(env.dirs.file(inst.sandboxId, 'qmp'), 5000).catch(() => null);
    if (qmp) {
      await qmp.execute('cont').catch(() => undefined);
      qmp.close();
    }
  }
  await env.dirs.write({ ...inst, checkpoint: undefined });
}

/** Bytes the image's files occupy on disk (the RAM file is sparse). */
async function allocatedBytes(imageDir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(imageDir)) total += (await stat(join(imageDir, name))).blocks * 512;
  return total;
}
