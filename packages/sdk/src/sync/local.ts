/**
 * The local side's changes: a tar from the sandbox unpacked into the local directory, and deletions,
 * each guarded like the sandbox's (see `remote.ts`): a path that is no longer what the pass saw (edited
 * meanwhile) is left alone and reported, never overwritten. Files are written to a temporary name
 * beside their place and renamed into it, so an editor or a build never sees half a file.
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, rename, rm, rmdir, symlink, unlink, utimes } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { localEntry, type TreeEntry } from './tree.js';

/** Infix of the temporary files a pull writes (ignored by the sync). */
export const TEMP_INFIX = '.ramify-sync-';

/** Whether `now` is still what `expected` said (absent, a directory, or the same kind, size and mtime). */
export function unchanged(now: TreeEntry | undefined, expected: TreeEntry | undefined): boolean {
  if (!now || !expected) return now === expected;
  if (now.kind !== expected.kind) return false;
  return now.kind === 'dir' || (now.size === expected.size && now.mtime === expected.mtime && now.target === expected.target);
}

/** What a pull placed: the local entry after it, and the content hash (see `SyncedEntry.hash`). */
export interface Placed {
  entry: TreeEntry;
  hash: string;
}

/**
 * Unpack `tar` into `root`. `expected` holds what each path was locally when the pass decided (absent
 * for a new one). Returns what was placed and the paths skipped because they changed meanwhile.
 */
export async function unpackInto(root: string, tar: ReadableStream<Uint8Array>, expected: ReadonlyMap<string, TreeEntry | undefined>): Promise<{ placed: Map<string, Placed>; skipped: Set<string> }> {
  const placed = new Map<string, Placed>();
  const skipped = new Set<string>();
  const { extract } = await import('tar-stream'); // loaded on first use: importing the SDK does not load the sync engine's dependencies
  const members = extract();
  const feeding = pipeline(Readable.fromWeb(tar as import('node:stream/web').ReadableStream<Uint8Array>), members);
  for await (const member of members) {
    const rel = member.header.name.replace(/\/+$/, '');
    const path = join(root, rel);
    if (!unchanged(await localEntry(root, rel), expected.get(rel))) {
      skipped.add(rel);
      member.resume();
      continue;
    }
    const mode = (member.header.mode ?? 0o644) & 0o7777;
    await mkdir(dirname(path), { recursive: true });
    let hash = '';
    if (member.header.type === 'directory') {
      member.resume();
      await mkdir(path, { recursive: true });
      await chmod(path, mode);
    } else if (member.header.type === 'symlink') {
      member.resume();
      const target = member.header.linkname ?? '';
      await rm(path, { force: true, recursive: false }).catch(() => undefined);
      await symlink(target, path);
      hash = `l:${target}`;
    } else {
      const tmp = join(dirname(path), `.${rel.split('/').pop() ?? 'f'}${TEMP_INFIX}${randomBytes(4).toString('hex')}`);
      const digest = createHash('sha256');
      member.on('data', (chunk: unknown) => void digest.update(chunk as Buffer));
      await pipeline(member, createWriteStream(tmp, { mode }));
      await chmod(tmp, mode);
      if (member.header.mtime) await utimes(tmp, member.header.mtime, member.header.mtime);
      // Checked again right before the rename: an edit made while the bytes came wins.
      if (!unchanged(await localEntry(root, rel), expected.get(rel))) {
        await unlink(tmp);
        skipped.add(rel);
        continue;
      }
      await rename(tmp, path);
      hash = digest.digest('hex');
    }
    const entry = await localEntry(root, rel);
    if (entry) placed.set(rel, { entry, hash });
  }
  await feeding;
  return { placed, skipped };
}

/**
 * Delete `root/rel` if it is still `expected` (a directory only when empty: what it holds now is
 * someone's). @returns false when it was left alone.
 */
export async function removeLocal(root: string, rel: string, expected: TreeEntry): Promise<boolean> {
  const path = join(root, rel);
  if (!unchanged(await localEntry(root, rel), expected)) return false;
  try {
    if (expected.kind === 'dir') await rmdir(path);
    else await unlink(path);
    return true;
  } catch {
    return false;
  }
}

/** Make sure `root` is a local directory (created when missing). @returns an error message when it is a file. */
export async function ensureLocalRoot(root: string): Promise<string | undefined> {
  const st = await lstat(root).catch(() => undefined);
  if (!st) {
    await mkdir(root, { recursive: true });
    return undefined;
  }
  return st.isDirectory() ? undefined : `${root} locally: it is a ${st.isSymbolicLink() ? 'symlink' : 'file'}, not a directory`;
}
