/**
 * Restore while the image arrives (docs/design/STORAGE.md, "Restore while the image arrives"): on a
 * cross-host resume the image is downloaded first, and `runsc restore` spends ~200 ms creating the
 * sandbox (its processes, platform, gofer) before it opens the image's files. That part runs during the
 * download here, and runsc reads no byte of the image before every byte is written and checked.
 *
 * How: runsc gets a view of the image directory in which every file is a symlink to the real one except
 * `pages_meta.img`, which is a FIFO. runsc (20240729, verified by strace) opens `checkpoint.img`,
 * `pages.img` and then `pages_meta.img` in its CLI process, reads none of them, and hands all three to the
 * sandbox in its restore call, sent after the last open. Opening a FIFO for reading blocks until a writer
 * opens it: the view's writer opens it only once the download resolved, so the sandbox is given the
 * files only then. The FIFO carries `pages_meta.img`'s bytes (a few KiB) from the real file. A FIFO in
 * place of `checkpoint.img` does not work (runsc refuses a state file whose size is 0).
 */
import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { mkdir, open, readdir, readFile, rm, symlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';

/** The file runsc opens last; made a FIFO in the view. */
export const PAGES_META = 'pages_meta.img';

/**
 * runsc releases whose restore was checked to open `pages_meta.img` after the other image files and to
 * read none before its restore call (strace of `runsc restore`). Other releases wait for the whole image.
 */
export const ARRIVING_RESTORE_RELEASES: readonly number[] = [20240729];

/**
 * Make `viewDir` (removed first) a view of `imageDir` for runsc: symlinks to its files, `pages_meta.img`
 * a FIFO. @returns the FIFO's path, or null when the image has no `pages_meta.img` (an image runsc
 * compressed itself: the caller waits for the whole image instead).
 */
export async function makeArrivingView(imageDir: string, viewDir: string): Promise<string | null> {
  const names = await readdir(imageDir);
  if (!names.includes(PAGES_META)) return null;
  await rm(viewDir, { recursive: true, force: true });
  await mkdir(viewDir, { recursive: true });
  for (const name of names) if (name !== PAGES_META) await symlink(join(imageDir, name), join(viewDir, name));
  const fifo = join(viewDir, PAGES_META);
  await promisify(execFile)('mkfifo', ['-m', '0600', fifo]);
  return fifo;
}

/**
 * Open the view's FIFO for writing once runsc has opened it for reading (polled: a non-blocking open
 * fails `ENXIO` until then), and write `source`'s bytes into it, or nothing when `source` is null (runsc
 * then reads an empty `pages_meta.img` and its restore fails: a download that failed stops it so).
 * Gives up without writing when `runscExited()` turns true first (runsc failed before its opens).
 * @throws the open's or write's error other than `ENXIO` / `EAGAIN`.
 */
export async function feedArrivingView(fifo: string, source: string | null, runscExited: () => boolean): Promise<void> {
  let handle: FileHandle | null = null;
  while (!handle) {
    try {
      handle = await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENXIO') throw error;
      if (runscExited()) return;
      await sleep(2);
    }
  }
  try {
    const bytes = source === null ? Buffer.alloc(0) : await readFile(source);
    for (let done = 0; done < bytes.length; ) {
      try {
        done += (await handle.write(bytes, done, bytes.length - done)).bytesWritten;
      } catch (error) {
        // The pipe is full (more than 64 KiB of metadata): runsc is reading it.
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
        if (runscExited()) return;
        await sleep(1);
      }
    }
  } finally {
    await handle.close();
  }
}
