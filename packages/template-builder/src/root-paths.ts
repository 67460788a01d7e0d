/**
 * Writing into a root filesystem from the host without escaping it. Paths are resolved the way the
 * sandbox will see them: a symlink inside the rootfs (`/bin -> usr/bin`, or an absolute one such as
 * `/etc/alternatives/x -> /usr/bin/y`) is followed relative to the rootfs, never to the host's `/`.
 */
import { RamifyError } from '@ramify/contracts';
import { chmod, lstat, mkdir, readlink, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Symlinks followed while resolving one path, like the kernel's limit. */
const MAX_SYMLINK_HOPS = 40;

/**
 * Host path of directory `guestPath` inside `rootDir`, creating missing directories (mode 0755).
 * Rejects `VALIDATION_FAILED` when a component is a file or a symlink loop.
 */
export async function ensureDirInRoot(rootDir: string, guestPath: string, mode = 0o755): Promise<string> {
  const pending = guestPath.split('/').filter(Boolean);
  const resolved: string[] = [];
  let hops = 0;
  while (pending.length > 0) {
    const part = pending.shift() as string;
    if (part === '.') continue;
    if (part === '..') {
      resolved.pop();
      continue;
    }
    const host = join(rootDir, ...resolved, part);
    const info = await lstat(host).catch((error: unknown) => {
      if ((error as { code?: string }).code === 'ENOENT') return null;
      throw error;
    });
    if (info === null) {
      await mkdir(host, { mode });
      await chmod(host, mode);
      resolved.push(part);
    } else if (info.isSymbolicLink()) {
      if (++hops > MAX_SYMLINK_HOPS) throw new RamifyError('VALIDATION_FAILED', `${guestPath}: too many levels of symbolic links`);
      const target = await readlink(host);
      if (target.startsWith('/')) resolved.length = 0;
      pending.unshift(...target.split('/').filter(Boolean));
    } else if (info.isDirectory()) {
      resolved.push(part);
    } else {
      throw new RamifyError('VALIDATION_FAILED', `${guestPath}: /${[...resolved, part].join('/')} is not a directory`);
    }
  }
  return join(rootDir, ...resolved);
}

/**
 * Write a file at `guestPath` inside `rootDir` (parents created) with exactly `mode`, owned by the
 * caller (root). An existing symlink or file at that path is replaced, never followed.
 * Rejects `VALIDATION_FAILED` when the path is a directory or a parent is not one.
 */
export async function writeFileInRoot(rootDir: string, guestPath: string, data: Uint8Array | string, mode: number): Promise<string> {
  const slash = guestPath.lastIndexOf('/');
  const name = guestPath.slice(slash + 1);
  if (!name || name === '.' || name === '..') throw new RamifyError('VALIDATION_FAILED', `${guestPath}: not a file path`);
  const host = join(await ensureDirInRoot(rootDir, guestPath.slice(0, slash)), name);
  const existing = await lstat(host).catch(() => null);
  if (existing?.isDirectory()) throw new RamifyError('VALIDATION_FAILED', `${guestPath}: is a directory in the template`);
  if (existing) await unlink(host);
  await writeFile(host, data, { mode, flag: 'wx' });
  await chmod(host, mode);
  return host;
}
