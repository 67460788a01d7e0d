/**
 * File operations of the agent. Paths are absolute (relative ones resolve against `/root`). Errors are
 * `RamifyError`s whose message names the path: FILE_NOT_FOUND, IS_A_DIRECTORY, NOT_A_DIRECTORY,
 * FILE_EXISTS, FORBIDDEN, BAD_REQUEST.
 */
import { chmod, lstat, mkdir, readdir, readlink, rename, rm, stat, symlink, truncate, utimes } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { RamifyError, type FileInfo } from '@ramify/contracts';

/** Resolve a client path: relative paths are taken from `/root`. @throws RamifyError BAD_REQUEST on an empty path. */
export function resolvePath(path: unknown): string {
  if (typeof path !== 'string' || path.length === 0) throw new RamifyError('BAD_REQUEST', 'path must be a non-empty string');
  if (path.includes('\0')) throw new RamifyError('BAD_REQUEST', `path contains a NUL byte: ${JSON.stringify(path)}`);
  return resolve('/root', path);
}

/** Map a Node fs error to a typed error naming `path`. */
export function fsError(err: unknown, path: string): RamifyError {
  if (err instanceof RamifyError) return err;
  const e = err as NodeJS.ErrnoException;
  switch (e.code) {
    case 'ENOENT':
      return new RamifyError('FILE_NOT_FOUND', `no such file or directory: ${path}`, { path });
    case 'EISDIR':
      return new RamifyError('IS_A_DIRECTORY', `is a directory: ${path}`, { path });
    case 'ENOTDIR':
      return new RamifyError('NOT_A_DIRECTORY', `not a directory: ${path}`, { path });
    case 'EEXIST':
      return new RamifyError('FILE_EXISTS', `already exists: ${path}`, { path });
    case 'ENOTEMPTY':
      return new RamifyError('CONFLICT', `directory not empty: ${path}`, { path });
    case 'EACCES':
    case 'EPERM':
      return new RamifyError('FORBIDDEN', `permission denied: ${path}`, { path });
    case 'ENOSPC':
    case 'EDQUOT':
      return new RamifyError('NO_SPACE', `no space left on the device for ${path}`, { path });
    case 'ENAMETOOLONG':
    case 'EINVAL':
      return new RamifyError('BAD_REQUEST', `invalid path: ${path} (${e.code})`, { path });
    default:
      return new RamifyError('INTERNAL', `${e.code ?? 'error'} on ${path}: ${e.message}`, { path });
  }
}

/** Build a FileInfo from lstat results. `mode` is the permission bits (0o7777). */
export function toFileInfo(path: string, s: Stats): FileInfo {
  const type = s.isFile() ? 'file' : s.isDirectory() ? 'dir' : s.isSymbolicLink() ? 'symlink' : 'other';
  return { name: basename(path) || path, path, type, size: s.size, mode: s.mode & 0o7777, mtimeMs: s.mtimeMs };
}

/** lstat a path. @throws RamifyError FILE_NOT_FOUND, NOT_A_DIRECTORY, ... */
export async function statPath(path: string): Promise<FileInfo> {
  try {
    return toFileInfo(path, await lstat(path));
  } catch (err) {
    throw fsError(err, path);
  }
}

/**
 * List a directory; `depth` 1 = its entries, 2 = also their children, ... Symlinks are not followed.
 * Sorted by path. @throws RamifyError FILE_NOT_FOUND, NOT_A_DIRECTORY.
 */
export async function listDir(path: string, depth = 1): Promise<FileInfo[]> {
  if (!Number.isInteger(depth) || depth < 1 || depth > 64) throw new RamifyError('BAD_REQUEST', `depth must be an integer in 1..64, got ${depth}`);
  const root = await statPath(path);
  if (root.type !== 'dir') {
    // stat follows a symlink to a directory; lstat said it is not one.
    const followed = await stat(path).catch(() => undefined);
    if (!followed?.isDirectory()) throw new RamifyError('NOT_A_DIRECTORY', `not a directory: ${path}`, { path });
  }
  const out: FileInfo[] = [];
  const walk = async (dir: string, level: number): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch (err) {
      if (dir === path) throw fsError(err, dir);
      return; // A subdirectory vanished or is unreadable: list what we can.
    }
    for (const name of names) {
      const child = join(dir, name);
      let info: FileInfo;
      try {
        info = toFileInfo(child, await lstat(child));
      } catch {
        continue;
      }
      out.push(info);
      if (info.type === 'dir' && level < depth) await walk(child, level + 1);
    }
  };
  await walk(path, 1);
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * Create a directory and its parents. @throws RamifyError FILE_EXISTS when the directory already exists
 * (the SDK's `makeDir` answers false, as E2B's does) or a file is in the way; NOT_A_DIRECTORY.
 */
export async function makeDir(path: string): Promise<FileInfo> {
  const existing = await statPath(path).catch(() => null);
  if (existing?.type === 'dir') throw new RamifyError('FILE_EXISTS', `directory already exists: ${path}`, { path });
  try {
    await mkdir(path, { recursive: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') throw new RamifyError('FILE_EXISTS', `a file that is not a directory exists at ${path}`, { path });
    throw fsError(err, path);
  }
  const info = await statPath(path);
  if (info.type !== 'dir') throw new RamifyError('FILE_EXISTS', `a file that is not a directory exists at ${path}`, { path });
  return info;
}

/** Remove a file or a directory tree. @throws RamifyError FILE_NOT_FOUND when nothing is there. */
export async function removePath(path: string): Promise<void> {
  if (path === '/') throw new RamifyError('BAD_REQUEST', 'refusing to remove /');
  await statPath(path);
  try {
    await rm(path, { recursive: true, force: true });
  } catch (err) {
    throw fsError(err, path);
  }
}

/** Rename (parents of `to` created). @throws RamifyError FILE_NOT_FOUND for `from`, others naming the path. */
export async function renamePath(from: string, to: string): Promise<FileInfo> {
  await statPath(from);
  try {
    await mkdir(dirname(to), { recursive: true });
  } catch (err) {
    throw fsError(err, dirname(to));
  }
  try {
    await rename(from, to);
  } catch (err) {
    throw fsError(err, `${from} -> ${to}`);
  }
  return statPath(to);
}

/** A number param: absent is undefined; anything else must be a finite number in `min..max`. */
function optionalNumber(params: Record<string, unknown>, key: string, min: number, max: number): number | undefined {
  const v = params[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) throw new RamifyError('BAD_REQUEST', `'${key}' must be a number in ${min}..${max}`);
  return v;
}

/**
 * Change a path's permission bits, times (ms; both or neither) and size, each only when given (symlinks
 * followed, as chmod, utimes and truncate do). Returns the path's lstat after.
 * @throws RamifyError BAD_REQUEST for a bad value, FILE_NOT_FOUND, FORBIDDEN, ...
 */
export async function setAttributes(path: string, params: Record<string, unknown>): Promise<FileInfo> {
  const mode = optionalNumber(params, 'mode', 0, 0o7777);
  const atimeMs = optionalNumber(params, 'atimeMs', 0, 8.64e15);
  const mtimeMs = optionalNumber(params, 'mtimeMs', 0, 8.64e15);
  const size = optionalNumber(params, 'size', 0, Number.MAX_SAFE_INTEGER);
  if ((atimeMs === undefined) !== (mtimeMs === undefined)) throw new RamifyError('BAD_REQUEST', "'atimeMs' and 'mtimeMs' go together");
  try {
    if (size !== undefined) await truncate(path, size);
    if (mode !== undefined) await chmod(path, mode);
    if (atimeMs !== undefined && mtimeMs !== undefined) await utimes(path, atimeMs / 1000, mtimeMs / 1000);
  } catch (err) {
    throw fsError(err, path);
  }
  return statPath(path);
}

/** The target of the symlink at `path`. @throws RamifyError FILE_NOT_FOUND, BAD_REQUEST (not a symlink). */
export async function readLink(path: string): Promise<string> {
  try {
    return await readlink(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EINVAL') throw new RamifyError('BAD_REQUEST', `not a symlink: ${path}`, { path });
    throw fsError(err, path);
  }
}

/** Make a symlink at `path` pointing to `target` (as given). @throws RamifyError FILE_EXISTS, FILE_NOT_FOUND (no parent). */
export async function makeSymlink(target: string, path: string): Promise<FileInfo> {
  try {
    await symlink(target, path);
  } catch (err) {
    throw fsError(err, path);
  }
  return statPath(path);
}
