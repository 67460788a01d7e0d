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
 * A *fork point* (forking a running sandbox) uses the loader path on any VM but keeps the VM: it is
 * stopped while its overlay is copied and its RAM migrates, then continued in the same process.
 *
 * Progress is recorded in the instance (`checkpoint` marker) so a restarted daemon can undo a
 * checkpoint QEMU had not finished, or finish one whose file moves were interrupted.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { RamifyError, isRamifyError } from '@ramify/contracts';
import { copySparse, freezeDisk, moveFile } from './disks.js';
import { removeGuestLink } from './guest-link.js';
import { IMAGE_FILES, IMAGE_FORMAT_VERSION, syncPaths, writeJsonAtomically, type ImageManifest, type InstanceRecord } from './image-files.js';
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
  let loader: Loader | null = null;
  try {
    await qmp.execute('stop');
    if (inst.ram === 'shared') {
      await saveDeviceState(qmp, env.dirs.file(inst.sandboxId, 'migrateOut'), join(imageDir, IMAGE_FILES.state));
    } else {
      loader = await materializeIntoImage(env, qmp, record, (started) => (loader = started));
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

/**
 * A fork point: checkpoint the running instance `inst` into `imageDir` (created) and let it go on
 * running in the same QEMU process. The VM is stopped only while its disk overlay is copied and its RAM
 * and device state migrate into a loader QEMU (the same materialization as a restored VM's checkpoint;
 * seconds under TCG), then continued (`cont` re-activates its disk after the outgoing migration). The
 * image's disk is frozen from the copy afterwards, while the VM runs. @returns allocated bytes of the image.
 */
export async function forkPointInstance(env: VmEnvironment, inst: InstanceRecord, imageDir: string): Promise<number> {
  const dir = env.dirs.dir(inst.sandboxId);
  if (!(await isQemuOf(inst.pid, dir + '/'))) throw new RamifyError('RUNTIME_ERROR', `microVM '${inst.sandboxId}' is not running`);
  await mkdir(imageDir, { recursive: true });
  const overlayCopy = env.dirs.file(inst.sandboxId, 'forkOverlay');
  let record: InstanceRecord = { ...inst, checkpoint: { imageDir, phase: 'migrating', keepRunning: true } };
  await env.dirs.write(record);
  const qmp = await QmpClient.connect(env.dirs.file(inst.sandboxId, 'qmp'));
  let loader: Loader | null = null;
  try {
    try {
      // Stopping flushes the disk: the copy is the disk at the fork point.
      await qmp.execute('stop');
      await copySparse(env.dirs.file(inst.sandboxId, 'overlay'), overlayCopy);
      loader = await materializeIntoImage(env, qmp, record, (started) => (loader = started));
    } catch (err) {
      if (loader) await quit(loader.qmp, loader.pid);
      await rm(imageDir, { recursive: true, force: true });
      await rm(overlayCopy, { force: true });
      await env.dirs.write({ ...inst, checkpoint: undefined });
      throw isRamifyError(err) ? err : new RamifyError('RUNTIME_ERROR', `fork point of microVM '${inst.sandboxId}' failed: ${(err as Error).message}`);
    }
    record = { ...inst, checkpoint: { imageDir, phase: 'files', keepRunning: true, loaderPid: loader.pid } };
    await env.dirs.write(record);
    // The loader holds the overlay (opened for the incoming migration): it goes before the VM takes it back.
    await quit(loader.qmp, loader.pid);
  } finally {
    await qmp.execute('cont').catch(() => undefined);
    qmp.close();
  }
  await finishForkPointFiles(env, record);
  return allocatedBytes(imageDir);
}

/**
 * Finish a fork point whose QEMU part was done when the previous daemon died: stop the loader if it is
 * still there, let the VM run again, finish the files.
 */
export async function finishInterruptedForkPoint(env: VmEnvironment, inst: InstanceRecord): Promise<void> {
  await stopLeftoverLoader(env, inst);
  await continueIfThere(env, inst);
  await finishForkPointFiles(env, inst);
}

/** Kill the loader QEMU a checkpoint marker names, if it still runs. */
async function stopLeftoverLoader(env: VmEnvironment, inst: InstanceRecord): Promise<void> {
  const loaderPid = inst.checkpoint?.loaderPid;
  if (loaderPid && (await isQemuOf(loaderPid, env.dirs.dir(inst.sandboxId) + '/'))) {
    killPid(loaderPid);
    await waitGone(loaderPid, 5000);
  }
}

/** Let the instance's VM run again (QMP `cont`) if its QEMU is still there. */
async function continueIfThere(env: VmEnvironment, inst: InstanceRecord): Promise<void> {
  if (!(await isQemuOf(inst.pid, env.dirs.dir(inst.sandboxId) + '/'))) return;
  const qmp = await QmpClient.connect(env.dirs.file(inst.sandboxId, 'qmp'), 5000).catch(() => null);
  await qmp?.execute('cont').catch(() => undefined);
  qmp?.close();
}

/**
 * The file half of a fork point, while the VM runs: freeze the image's disk from the overlay copy, write
 * the manifest, clear the marker. Safe to repeat after an interruption.
 */
export async function finishForkPointFiles(env: VmEnvironment, inst: InstanceRecord): Promise<void> {
  const imageDir = inst.checkpoint!.imageDir;
  const overlayCopy = env.dirs.file(inst.sandboxId, 'forkOverlay');
  if (existsSync(overlayCopy)) {
    await freezeDisk(env.qemuImgPath, { overlay: overlayCopy, lower: inst.hasLower ? env.dirs.file(inst.sandboxId, 'lower') : null }, join(imageDir, IMAGE_FILES.disk));
  }
  await writeManifest(env, inst, imageDir);
  await env.dirs.write({ ...inst, checkpoint: undefined });
}

type Loader = Awaited<ReturnType<typeof startLoader>>;

/**
 * Materialize the stopped VM's RAM into the image of `record`'s checkpoint marker: start a loader on
 * the image's RAM file (its pid recorded in the marker; `onStarted` lets the caller stop it on failure),
 * migrate RAM and devices into it, save its device state into the image. @returns the loader, to quit.
 */
async function materializeIntoImage(env: VmEnvironment, qmp: QmpClient, record: InstanceRecord, onStarted: (loader: Loader) => void): Promise<Loader> {
  const marker = record.checkpoint!;
  const loader = await startLoader(env, record, join(marker.imageDir, IMAGE_FILES.ram));
  onStarted(loader);
  await env.dirs.write({ ...record, checkpoint: { ...marker, loaderPid: loader.pid } });
  await copyRamToLoader(qmp, loader.qmp, `unix:${env.dirs.file(record.sandboxId, 'migrateLocal')}`);
  await saveDeviceState(loader.qmp, env.dirs.file(record.sandboxId, 'migrateOut'), join(marker.imageDir, IMAGE_FILES.state));
  return loader;
}

/** Migrate a stopped VM's RAM and devices into a loader waiting for them (x-ignore-shared off on both ends). */
async function copyRamToLoader(qmp: QmpClient, loader: QmpClient, uri: string): Promise<void> {
  // A restore turned x-ignore-shared on; both ends of this migration must have it off.
  await qmp.execute('migrate-set-capabilities', { capabilities: [{ capability: 'x-ignore-shared', state: false }] });
  await loader.execute('migrate-incoming', { uri });
  await qmp.execute('migrate', { uri });
  await waitForMigration(qmp, 'copying RAM to the image', MIGRATION_TIMEOUT_MS);
  await waitForMigration(loader, 'loading RAM into the image', MIGRATION_TIMEOUT_MS);
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
  await writeManifest(env, inst, imageDir);
  await env.dirs.destroy(inst.sandboxId);
  await removeGuestLink(inst.netnsPath);
}

/**
 * Check the image's three files are there and fsync them (QEMU and the loader write through the page
 * cache), then write its manifest (last: it marks the image complete) and fsync it and the directory.
 */
async function writeManifest(env: VmEnvironment, inst: InstanceRecord, imageDir: string): Promise<void> {
  const files = [IMAGE_FILES.ram, IMAGE_FILES.state, IMAGE_FILES.disk].map((name) => join(imageDir, name));
  for (const file of files) {
    if (!existsSync(file)) throw new RamifyError('RUNTIME_ERROR', `checkpoint of microVM '${inst.sandboxId}' left no ${basename(file)} in ${imageDir}`);
  }
  await syncPaths(files);
  const manifest: ImageManifest = {
    formatVersion: IMAGE_FORMAT_VERSION,
    machine: inst.machine,
    baseDisk: inst.baseDisk,
    guestKernel: env.kernel.version,
    qemu: env.qemuRelease,
    createdAt: new Date().toISOString(),
  };
  await writeJsonAtomically(join(imageDir, IMAGE_FILES.manifest), manifest);
  await syncPaths([join(imageDir, IMAGE_FILES.manifest), imageDir]);
}

/**
 * Undo a checkpoint that QEMU had not finished when the previous daemon died: stop the loader, delete
 * the partial image, and let the VM run again if it is still there.
 */
export async function undoCheckpoint(env: VmEnvironment, inst: InstanceRecord): Promise<void> {
  await stopLeftoverLoader(env, inst);
  await rm(inst.checkpoint!.imageDir, { recursive: true, force: true });
  await rm(env.dirs.file(inst.sandboxId, 'forkOverlay'), { force: true });
  await continueIfThere(env, inst);
  await env.dirs.write({ ...inst, checkpoint: undefined });
}

/** Bytes the image's files occupy on disk (the RAM file is sparse). */
async function allocatedBytes(imageDir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(imageDir)) total += (await stat(join(imageDir, name))).blocks * 512;
  return total;
}
