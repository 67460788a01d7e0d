/**
 * What a sync knows of a path on one side, and reading it: on the local side with `lstat`, in the
 * sandbox from `find -printf` records (see `remote.ts`). Paths are relative to the synced directory,
 * `/`-separated, never starting with `./`.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { join } from 'node:path';

export type EntryKind = 'file' | 'dir' | 'symlink';

/** One side's view of a path. `mtime` is opaque: compared only with the same side's earlier value. */
export interface TreeEntry {
  kind: EntryKind;
  size: number;
  mtime: string;
  /** Permission bits (0o7777). */
  mode: number;
  /** A symlink's target, verbatim. */
  target?: string;
}

/** The `find -printf` format every remote listing uses: type, path, size, mtime (s.ns), mode (octal), link target. */
export const FIND_FORMAT = '%y\\0%p\\0%s\\0%T@\\0%m\\0%l\\0';

/** Parse `find -printf FIND_FORMAT` output (paths given as `./rel`) into entries; other kinds (fifos, sockets) are skipped. */
export function parseFind(output: string): Map<string, TreeEntry> {
  const fields = output.split('\0');
  const out = new Map<string, TreeEntry>();
  for (let i = 0; i + 5 < fields.length; i += 6) {
    const [y, p, size, mtime, mode, target] = fields.slice(i, i + 6) as [string, string, string, string, string, string];
    const kind: EntryKind | undefined = y === 'f' ? 'file' : y === 'd' ? 'dir' : y === 'l' ? 'symlink' : undefined;
    const rel = p.startsWith('./') ? p.slice(2) : p;
    if (!kind || rel === '.' || rel === '') continue;
    out.set(rel, { kind, size: Number(size), mtime, mode: parseInt(mode, 8), ...(kind === 'symlink' ? { target } : {}) });
  }
  return out;
}

/** lstat `root/rel` as a {@link TreeEntry}; undefined when absent (or a kind a sync does not carry). */
export async function localEntry(root: string, rel: string): Promise<TreeEntry | undefined> {
  const path = join(root, rel);
  const st = await lstat(path, { bigint: true }).catch(() => undefined);
  if (!st) return undefined;
  const kind: EntryKind | undefined = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : undefined;
  if (!kind) return undefined;
  const entry: TreeEntry = { kind, size: Number(st.size), mtime: st.mtimeNs.toString(), mode: Number(st.mode & 0o7777n) };
  if (kind === 'symlink') entry.target = await readlink(path);
  return entry;
}

/**
 * Every entry under `root` that `keep(rel, isDir)` accepts (an ignored directory is not entered). Symlinks
 * are entries, never followed.
 */
export async function scanLocal(root: string, keep: (rel: string, isDir: boolean) => boolean, under = ''): Promise<Map<string, TreeEntry>> {
  const out = new Map<string, TreeEntry>();
  const walk = async (dir: string): Promise<void> => {
    const names = await readdir(join(root, dir)).catch(() => [] as string[]);
    await Promise.all(names.map(async (name) => {
      const rel = dir ? `${dir}/${name}` : name;
      const entry = await localEntry(root, rel);
      if (!entry || !keep(rel, entry.kind === 'dir')) return;
      out.set(rel, entry);
      if (entry.kind === 'dir') await walk(rel);
    }));
  };
  await walk(under);
  return out;
}

/** sha256 (hex) of a local file's bytes, or `l:TARGET` for a symlink, `''` for a directory. */
export async function localHash(root: string, rel: string, entry: TreeEntry): Promise<string> {
  if (entry.kind === 'dir') return '';
  if (entry.kind === 'symlink') return `l:${entry.target ?? ''}`;
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(join(root, rel))) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
