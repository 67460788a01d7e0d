/**
 * Deleting build directories without ever crossing into a mount. mmdebstrap mounts /proc, /sys and
 * /dev inside its target while it works; a recursive delete that followed such a mount after a
 * crash would delete host files. So every delete checks the mount table first and refuses.
 */
import { RamifyError } from '@ramify/contracts';
import { readFile, rm } from 'node:fs/promises';
import { resolve } from 'node:path';

/** Mount points (absolute, unescaped) at or below `dir`, read from /proc/self/mountinfo. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const root = resolve(dir);
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  const points = text
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' ')[4].replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))));
  return points.filter((point) => point === root || point.startsWith(`${root}/`));
}

/**
 * `rm -rf dir`, unless something is mounted at or below it: then rejects `INTERNAL` naming the
 * mounts (unmount them by hand; nothing is deleted). A no-op when `dir` does not exist.
 */
export async function removeTreeSafely(dir: string): Promise<void> {
  const mounts = await mountsUnder(dir);
  if (mounts.length > 0) {
    throw new RamifyError('INTERNAL', `refusing to delete ${dir}: still mounted below it: ${mounts.join(', ')}`, { dir, mounts });
  }
  await rm(dir, { recursive: true, force: true });
}
