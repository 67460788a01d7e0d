/**
 * The sync's decision for one path, from what each side has now and what both had when last in sync
 * (the base, kept in the state file). Pure: the pass (session.ts) gathers the entries and the hashes this
 * asks for, and carries out the action.
 *
 * Rules: a side changed when it differs from the base (created, deleted, other kind, other mode, other
 * content). One side changed: carry it over. Both changed: the same content is no conflict; a change
 * beats a deletion (nothing is lost: the changed version comes back); two directories merge (the local
 * mode wins); anything else is a conflict: the sandbox's version is renamed `NAME.conflict` in the
 * sandbox (and synced like any file), the local version takes the name on both sides.
 */
import type { TreeEntry } from './tree.js';

/** What both sides had when last in sync. */
export interface SyncedEntry {
  kind: TreeEntry['kind'];
  mode: number;
  /** sha256 hex of a file's bytes; `l:TARGET` for a symlink; `''` for a directory. */
  hash: string;
  local: { size: number; mtime: string };
  remote: { size: number; mtime: string };
}

/** How one side stands against the base. `maybe`: a file's mtime moved, not its size; its hash decides. */
export type SideChange = 'none' | 'created' | 'deleted' | 'changed' | 'maybe';

/** How `entry` (one side's, `side`) stands against `base`. */
export function sideChange(entry: TreeEntry | undefined, base: SyncedEntry | undefined, side: 'local' | 'remote'): SideChange {
  if (!entry) return base ? 'deleted' : 'none';
  if (!base) return 'created';
  if (entry.kind !== base.kind) return 'changed';
  if (entry.kind === 'symlink') return `l:${entry.target ?? ''}` === base.hash ? 'none' : 'changed';
  if (entry.mode !== base.mode) return 'changed';
  if (entry.kind === 'dir') return 'none';
  const seen = base[side];
  if (entry.size !== seen.size) return 'changed';
  return entry.mtime === seen.mtime ? 'none' : 'maybe';
}

export type SyncAction =
  /** Nothing to do (the state may still take the new stats: `record`). */
  | 'none'
  /** Both sides agree: (re)write the base from them. */
  | 'record'
  | 'push'
  | 'pull'
  | 'deleteRemote'
  | 'deleteLocal'
  /** Deleted on both sides: drop the base. */
  | 'forget'
  /** Keep both: the sandbox's version to `NAME.conflict`, the local one pushed. */
  | 'conflict';

/** A side's change with its hash known: `maybe` resolved to `none` (same bytes) or `changed`. */
export interface ResolvedSide {
  change: Exclude<SideChange, 'maybe'>;
  entry: TreeEntry | undefined;
  /** Content hash (see {@link SyncedEntry.hash}) when it was needed and computed. */
  hash?: string;
}

/** The action for one path. `sameContent` compares two present entries' kinds and hashes. */
export function decide(local: ResolvedSide, remote: ResolvedSide): SyncAction {
  const l = local.change;
  const r = remote.change;
  if (l === 'none' && r === 'none') return 'none';
  if (r === 'none') return l === 'deleted' ? 'deleteRemote' : 'push';
  if (l === 'none') return r === 'deleted' ? 'deleteLocal' : 'pull';
  if (l === 'deleted' && r === 'deleted') return 'forget';
  if (l === 'deleted') return 'pull';
  if (r === 'deleted') return 'push';
  if (sameContent(local, remote)) return local.entry!.mode === remote.entry!.mode ? 'record' : 'push';
  if (local.entry!.kind === 'dir' && remote.entry!.kind === 'dir') return 'push';
  return 'conflict';
}

/** Both present, same kind, and the same bytes (or link target); directories are always the same. */
export function sameContent(local: ResolvedSide, remote: ResolvedSide): boolean {
  const a = local.entry;
  const b = remote.entry;
  if (!a || !b || a.kind !== b.kind) return false;
  if (a.kind === 'dir') return true;
  return local.hash !== undefined && local.hash === remote.hash;
}

/**
 * The name the sandbox's losing version takes: `NAME.conflict`, or `NAME.conflict.2`, `.3`, ... when
 * `taken` says that one is used (on either side or in the base).
 */
export function conflictName(path: string, taken: (candidate: string) => boolean): string {
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? `${path}.conflict` : `${path}.conflict.${n}`;
    if (!taken(candidate)) return candidate;
  }
}
