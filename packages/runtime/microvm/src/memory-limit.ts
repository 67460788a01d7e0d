/**
 * The memory limit of a microVM: a virtio balloon holding everything above `memoryMB`.
 *
 * A VM's RAM size is fixed when its template is booted (a restore must match the image's machine), so
 * templates are booted with at least `imageMemoryMB` of RAM (sparse: untouched RAM costs neither disk
 * nor host memory) and every boot and restore sets the balloon target (QMP `balloon`) to the
 * sandbox's `memoryMB`. The guest's `virtio_balloon` driver (loaded by the initramfs) takes the pages
 * above the target out of use — `MemTotal` shrinks accordingly and a guest allocating beyond it hits
 * its own OOM killer — and QEMU releases them on the host. The device has no deflate-on-OOM, so the
 * guest cannot take the memory back under pressure; a guest root that unloads the driver gets at most
 * the image's RAM size. The balloon level is device state: a checkpoint keeps it, a restore resets it.
 *
 * In a restored VM the balloon's hole punches are neutralized by the discard guard (discard-guard.ts)
 * so they never reach the shared image RAM file.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { RamifyError } from '@ramify/contracts';
import type { MachineConfig } from './qemu-argv.js';
import type { QmpClient } from './qmp.js';

const MiB = 1024 * 1024;

/** Smallest `memoryMB` a microVM accepts (the API's own minimum). */
export const MIN_MEMORY_MB = 128;

/**
 * Reject a memory limit the image cannot give: above its RAM size (`VALIDATION_FAILED`, naming the
 * maximum and how to get more) or below {@link MIN_MEMORY_MB}.
 * @param source what the machine belongs to, for the message (e.g. `image /data/snapshots/x`).
 */
export function checkMemoryLimit(memoryMB: number, machine: MachineConfig, source: string): void {
  if (!Number.isFinite(memoryMB) || memoryMB < MIN_MEMORY_MB) {
    throw new RamifyError('VALIDATION_FAILED', `memoryMB ${memoryMB} is below the microVM minimum of ${MIN_MEMORY_MB} MiB`, { memoryMB, minMemoryMB: MIN_MEMORY_MB });
  }
  if (memoryMB > machine.memoryMB) {
    throw new RamifyError(
      'VALIDATION_FAILED',
      `memoryMB ${memoryMB} is more than the ${machine.memoryMB} MiB of RAM the microVM ${source} was booted with, which is ` +
        `the most a sandbox restored from it can have; for more, start the daemon with \`ramify serve --microvm-memory <MB>\` ` +
        `and build the template again (\`ramify template build <spec> --runtime microvm\`)`,
      { memoryMB, maxMemoryMB: machine.memoryMB },
    );
  }
}

/** Set the balloon so the guest can use at most `memoryMB` MiB. Rejects `RUNTIME_ERROR` when QEMU refuses. */
export async function setMemoryLimit(qmp: QmpClient, memoryMB: number): Promise<void> {
  await qmp.execute('balloon', { value: Math.floor(memoryMB) * MiB });
}

/** The guest's memory as the balloon reports it (`query-balloon`'s `actual`), bytes. */
export async function balloonActualBytes(qmp: QmpClient): Promise<number> {
  return (await qmp.execute<{ actual: number }>('query-balloon')).actual;
}

export interface BalloonWait {
  /** Give up when the balloon has not moved for this long, ms (the guest uses more than the limit). */
  stallMs: number;
  /** Give up after this long in any case, ms. */
  timeoutMs: number;
}

/**
 * Wait until the guest's memory is down to `memoryMB` (the balloon inflated), or it stopped moving for
 * `stallMs` (a guest using more than the limit gives up pages only as it frees them), or `timeoutMs`.
 * Never rejects for a balloon that falls short. @returns the guest memory reached, bytes.
 */
export async function waitForMemoryLimit(qmp: QmpClient, memoryMB: number, wait: BalloonWait): Promise<number> {
  const target = Math.floor(memoryMB) * MiB;
  const deadline = Date.now() + wait.timeoutMs;
  let last = await balloonActualBytes(qmp);
  let lastMove = Date.now();
  while (last > target && Date.now() < deadline && Date.now() - lastMove < wait.stallMs) {
    await sleep(100);
    const now = await balloonActualBytes(qmp);
    if (now !== last) lastMove = Date.now();
    last = now;
  }
  return last;
}
