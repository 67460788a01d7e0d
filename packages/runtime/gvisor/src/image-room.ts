/**
 * Room for a checkpoint image, checked before runsc writes it. runsc 20240729 stops a sandbox whose image
 * cannot be written (with `-compression none` it fails on a nil pointer rather than naming ENOSPC), and
 * core can then only bring it back from its last image, losing what changed since
 * (docs/design/RUNTIME-GVISOR.md, "A checkpoint never loses a sandbox"). Refusing up front keeps it running.
 */
import { statfs } from 'node:fs/promises';
import { RamifyError } from '@ramify/contracts';

const MB = 1024 * 1024;

/**
 * Reject when the filesystem of `imageDir` has less free space (for unprivileged writers too) than
 * `neededBytes`: an uncompressed image holds at most the sandbox's memory in use (its cgroup's figure:
 * the application's pages, its file changes, which live in memory, and the sentry's own state).
 * No check when `neededBytes` is null (no cgroup to read).
 * @throws RamifyError `NO_SPACE` naming both figures; nothing was written, the sandbox runs on.
 */
export async function assertRoomForImage(imageDir: string, neededBytes: number | null): Promise<void> {
  if (neededBytes === null) return;
  const fs = await statfs(imageDir);
  const freeBytes = fs.bavail * fs.bsize;
  if (freeBytes >= neededBytes) return;
  throw new RamifyError(
    'NO_SPACE',
    `no space left on device for the checkpoint image: it takes up to ${Math.ceil(neededBytes / MB)} MB (the sandbox's memory in use) and the filesystem of ${imageDir} has ${Math.floor(freeBytes / MB)} MB free; free disk space on the host and try again`,
    { neededBytes, freeBytes },
  );
}
