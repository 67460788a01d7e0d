/**
 * One sync pass over some paths (or all): read both sides, decide each path against the base
 * (`reconcile.ts`), then carry the changes out, sandbox first (renames of conflict losers, deletions,
 * one tar of everything pushed per batch), then the local side (deletions, one tar of everything
 * pulled), and record the new base. A path skipped by a guard (changed meanwhile) keeps its old base
 * and is handed back dirty, so the next pass decides it again with what it is now.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { conflictName, decide, sideChange, type ResolvedSide, type SyncAction, type SyncedEntry } from './reconcile.js';
import { removeLocal, unpackInto } from './local.js';
import { expectation, type RemoteOp, type RemoteTree } from './remote.js';
import { localEntry, localHash, scanLocal, type TreeEntry } from './tree.js';
import type { KeepPath } from './ignore-rules.js';

/** Progress of a pass's transfers: `done` of `total` paths (`scan` before they are known). */
export interface SyncProgress {
  phase: 'scan' | 'upload' | 'download';
  done: number;
  total: number;
}

/** One change a pass made. `conflict`: the sandbox's version was kept as `copy`, the local one took `path`. */
export type SyncChange =
  | { kind: 'pushed' | 'pulled' | 'deletedRemote' | 'deletedLocal'; path: string }
  | { kind: 'conflict'; path: string; copy: string };

/** What a pass works with. */
export interface PassContext {
  localRoot: string;
  remote: RemoteTree;
  keep: KeepPath;
  state: Map<string, SyncedEntry>;
  onProgress?: (progress: SyncProgress) => void;
  onChange?: (change: SyncChange) => void;
}

/** Paths per tar, and bytes, at most. */
const BATCH_PATHS = 2000;
const BATCH_BYTES = 64 << 20;
/** Files up to this size are read whole into the tar; larger ones are streamed. */
const SMALL_FILE_BYTES = 1 << 20;

/**
 * Run a pass over `scope` (or all). Paths in `remoteChanged` are read in the sandbox; the others only
 * changed locally as far as anyone knows, so the sandbox is taken to be as in the base (one command
 * less, and the guard catches it if not). @returns the paths to look at again (skipped by a guard),
 * to be read on both sides next time.
 */
export async function runPass(ctx: PassContext, scope: 'all' | ReadonlySet<string>, remoteChanged: ReadonlySet<string> = new Set()): Promise<Set<string>> {
  const { local, remote } = await readSides(ctx, scope, remoteChanged);
  const paths = new Set(scope === 'all' ? [...local.keys(), ...remote.keys(), ...ctx.state.keys()] : [...scope, ...local.keys(), ...remote.keys()]);
  const decided = await decideAll(ctx, [...paths].filter((p) => ctx.keep(p, (local.get(p) ?? remote.get(p))?.kind === 'dir')).sort(), local, remote);
  return carryOut(ctx, decided, local, remote);
}

async function readSides(ctx: PassContext, scope: 'all' | ReadonlySet<string>, remoteChanged: ReadonlySet<string>): Promise<{ local: Map<string, TreeEntry>; remote: Map<string, TreeEntry> }> {
  const keepEntries = (m: Map<string, TreeEntry>): Map<string, TreeEntry> => new Map([...m].filter(([p, e]) => ctx.keep(p, e.kind === 'dir') && ancestorsKept(ctx.keep, p)));
  if (scope === 'all') {
    ctx.onProgress?.({ phase: 'scan', done: 0, total: 0 });
    const [local, remote] = await Promise.all([scanLocal(ctx.localRoot, ctx.keep), ctx.remote.scan()]);
    return { local, remote: keepEntries(remote) };
  }
  const paths = [...scope];
  const fresh = paths.filter((p) => !ctx.state.has(p));
  const local = new Map<string, TreeEntry>();
  await Promise.all(paths.map(async (p) => {
    const entry = await localEntry(ctx.localRoot, p);
    if (entry) local.set(p, entry);
    if (entry?.kind === 'dir' && !ctx.state.has(p)) for (const [q, e] of await scanLocal(ctx.localRoot, ctx.keep, p)) local.set(q, e);
  }));
  const asRead = paths.filter((p) => remoteChanged.has(p));
  const remote = await ctx.remote.stat(asRead, fresh.filter((p) => remoteChanged.has(p)));
  for (const p of paths) {
    const base = ctx.state.get(p);
    if (!remoteChanged.has(p) && base) remote.set(p, asInBase(base));
  }
  return { local: keepEntries(local), remote: keepEntries(remote) };
}

/** The sandbox's entry as the base recorded it. */
function asInBase(base: SyncedEntry): TreeEntry {
  const entry: TreeEntry = { kind: base.kind, size: base.remote.size, mtime: base.remote.mtime, mode: base.mode };
  if (base.kind === 'symlink') entry.target = base.hash.slice(2);
  return entry;
}

/** Every parent directory of `rel` is carried too (an ignored directory's contents are ignored). */
function ancestorsKept(keep: KeepPath, rel: string): boolean {
  const parts = rel.split('/');
  for (let i = 1; i < parts.length; i++) if (!keep(parts.slice(0, i).join('/'), true)) return false;
  return true;
}

interface Decided {
  path: string;
  action: SyncAction;
  local: ResolvedSide;
  remote: ResolvedSide;
}

async function decideAll(ctx: PassContext, paths: string[], local: Map<string, TreeEntry>, remote: Map<string, TreeEntry>): Promise<Decided[]> {
  const raw = paths.map((path) => {
    const base = ctx.state.get(path);
    return { path, base, l: sideChange(local.get(path), base, 'local'), r: sideChange(remote.get(path), base, 'remote'), le: local.get(path), re: remote.get(path) };
  });
  // Hashes only where they decide: a moved stat (`maybe`), or two new or changed files of one size.
  const bothFiles = (x: (typeof raw)[number]): boolean => x.l !== 'none' && x.r !== 'none' && x.le?.kind === 'file' && x.re?.kind === 'file' && x.le.size === x.re.size;
  const needLocal = raw.filter((x) => x.le && (x.l === 'maybe' || bothFiles(x)));
  const needRemote = raw.filter((x) => x.re?.kind === 'file' && (x.r === 'maybe' || bothFiles(x)));
  const remoteHashes = await ctx.remote.hashes(needRemote.map((x) => x.path));
  const localHashes = new Map<string, string>();
  for (let i = 0; i < needLocal.length; i += 16) {
    await Promise.all(needLocal.slice(i, i + 16).map(async (x) => localHashes.set(x.path, await localHash(ctx.localRoot, x.path, x.le!).catch(() => ''))));
  }
  return raw.map((x) => {
    const resolve = (change: typeof x.l, entry: TreeEntry | undefined, hash: string | undefined): ResolvedSide => {
      const h = hash ?? (entry?.kind === 'symlink' ? `l:${entry.target ?? ''}` : entry?.kind === 'dir' ? '' : undefined);
      const c = change === 'maybe' ? (h !== undefined && h === x.base?.hash ? 'none' : 'changed') : change;
      return h === undefined ? { change: c, entry } : { change: c, entry, hash: h };
    };
    const l = resolve(x.l, x.le, localHashes.get(x.path));
    const r = resolve(x.r, x.re, remoteHashes.get(x.path));
    let action = decide(l, r);
    // Same bytes, only a stat moved (a touch, a copy back): take the new stats.
    if (action === 'none' && (x.l === 'maybe' || x.r === 'maybe')) action = 'record';
    return { path: x.path, action, local: l, remote: r };
  });
}

async function carryOut(ctx: PassContext, decided: Decided[], local: Map<string, TreeEntry>, remote: Map<string, TreeEntry>): Promise<Set<string>> {
  const again = new Set<string>();
  const taken = (p: string): boolean => local.has(p) || remote.has(p) || ctx.state.has(p);
  const pushes: Decided[] = [];
  const pulls = new Map<string, TreeEntry>(); // path → the remote entry it is pulled as
  const ops: RemoteOp[] = [];
  const conflicts = new Map<string, string>();
  for (const d of decided) {
    const re = d.remote.entry;
    const le = d.local.entry;
    if (d.action === 'push' || d.action === 'conflict') {
      if (d.action === 'conflict' && re) {
        const copy = conflictName(d.path, taken);
        conflicts.set(d.path, copy);
        ops.push({ op: 'mv', path: d.path, expect: expectation(re), to: copy });
        pulls.set(copy, re);
      } else if (re && le && (re.kind !== le.kind || re.kind === 'symlink')) ops.push({ op: 'del', path: d.path, expect: expectation(re) });
      pushes.push(d);
    } else if (d.action === 'deleteRemote' && re) ops.push({ op: 'del', path: d.path, expect: expectation(re) });
    else if (d.action === 'pull' && re) pulls.set(d.path, re);
    else if (d.action === 'forget') ctx.state.delete(d.path);
    else if (d.action === 'record' && le && re) ctx.state.set(d.path, synced(le, re, d.local.hash ?? d.remote.hash ?? ''));
  }
  // Deepest first, so a directory is empty by the time its turn comes.
  ops.sort((a, b) => (a.op === 'mv' ? -1 : b.op === 'mv' ? 1 : b.path.split('/').length - a.path.split('/').length));
  await pushAll(ctx, pushes, ops, again, conflicts);

  for (const d of decided.filter((x) => x.action === 'deleteLocal').reverse()) {
    if (await removeLocal(ctx.localRoot, d.path, d.local.entry!)) {
      ctx.state.delete(d.path);
      ctx.onChange?.({ kind: 'deletedLocal', path: d.path });
    } else again.add(d.path);
  }
  await pullAll(ctx, pulls, local, again);
  return again;
}

async function pushAll(ctx: PassContext, pushes: Decided[], ops: RemoteOp[], again: Set<string>, conflicts: Map<string, string>): Promise<void> {
  const batches: Decided[][] = [[]];
  let bytes = 0;
  for (const d of pushes) {
    const size = d.local.entry?.size ?? 0;
    if (batches.at(-1)!.length >= BATCH_PATHS || (bytes + size > BATCH_BYTES && batches.at(-1)!.length > 0)) {
      batches.push([]);
      bytes = 0;
    }
    batches.at(-1)!.push(d);
    bytes += size;
  }
  let done = 0;
  for (const [i, batch] of batches.entries()) {
    const batchOps: RemoteOp[] = [...(i === 0 ? ops : []), ...batch.map((d) => ({ op: 'put' as const, path: d.path, expect: d.action === 'conflict' ? '-' : expectation(d.remote.entry && !ops.some((o) => o.op === 'del' && o.path === d.path) ? d.remote.entry : undefined) }))];
    if (batchOps.length === 0) continue;
    if (pushes.length > 0) ctx.onProgress?.({ phase: 'upload', done, total: pushes.length });
    const hashes = new Map<string, string>();
    const { skipped, kept, after: posted } = await ctx.remote.apply(batchOps, batch.length > 0 ? await packBatch(ctx.localRoot, batch, hashes) : undefined);
    for (const o of batchOps) {
      if (skipped.has(o.path)) {
        again.add(o.path);
        continue;
      }
      if (o.op === 'del' && !kept.has(o.path) && !batch.some((d) => d.path === o.path)) {
        ctx.state.delete(o.path);
        ctx.onChange?.({ kind: 'deletedRemote', path: o.path });
      }
    }
    for (const d of batch) {
      const after = posted.get(d.path);
      if (skipped.has(d.path) || !after || !d.local.entry) {
        again.add(d.path);
        continue;
      }
      ctx.state.set(d.path, synced(d.local.entry, after, hashes.get(d.path) ?? d.local.hash ?? ''));
      const copy = conflicts.get(d.path);
      ctx.onChange?.(copy ? { kind: 'conflict', path: d.path, copy } : { kind: 'pushed', path: d.path });
    }
    done += batch.length;
    if (pushes.length > 0) ctx.onProgress?.({ phase: 'upload', done, total: pushes.length });
  }
}

/** A local file changed between the pass's look at it and its read: the pass is redone, nothing reported. */
export class LocalChangedError extends Error {
  constructor(readonly path: string) {
    super(`${path} changed while being read`);
    this.name = 'LocalChangedError';
  }
}

/** A tar of `batch`'s local entries (files hashed as they are read, into `hashes`). */
async function packBatch(root: string, batch: Decided[], hashes: Map<string, string>): Promise<AsyncIterable<Uint8Array>> {
  const { pack } = await import('tar-stream'); // loaded on first use: importing the SDK does not load the sync engine's dependencies
  const tar = pack();
  void (async () => {
    try {
      for (const d of batch) {
        const e = d.local.entry!;
        const header = { name: d.path, mode: e.mode, mtime: new Date(Number(BigInt(e.mtime) / 1_000_000n)) };
        if (e.kind === 'dir') tar.entry({ ...header, type: 'directory' });
        else if (e.kind === 'symlink') tar.entry({ ...header, type: 'symlink', linkname: e.target ?? '' });
        else if (e.size <= SMALL_FILE_BYTES) {
          const bytes = await readFile(join(root, d.path));
          if (bytes.byteLength !== e.size) throw new LocalChangedError(d.path);
          hashes.set(d.path, createHash('sha256').update(bytes).digest('hex'));
          tar.entry({ ...header, type: 'file', size: e.size }, bytes);
        } else {
          // Exactly the size the pass saw: a file still growing gives its first e.size bytes (the next
          // pass sees it changed and sends it again), a shrunk one is a LocalChangedError. tar-stream's
          // entry fails with 'Size mismatch' otherwise, an error nobody would hear.
          const digest = createHash('sha256');
          const sink = tar.entry({ ...header, type: 'file', size: e.size });
          let sinkError: Error | undefined;
          sink.on('error', (err: Error) => (sinkError = err));
          let read = 0;
          for await (const chunk of createReadStream(join(root, d.path), { end: e.size - 1 })) {
            read += (chunk as Buffer).byteLength;
            digest.update(chunk as Buffer);
            if (!sink.write(chunk as Buffer)) await new Promise<void>((r) => sink.once('drain', () => r()));
            if (sinkError) throw sinkError;
          }
          if (read !== e.size) throw new LocalChangedError(d.path);
          await new Promise<void>((resolve, reject) => sink.end((err?: Error | null) => (err ? reject(err) : resolve())));
          hashes.set(d.path, digest.digest('hex'));
        }
      }
      tar.finalize();
    } catch (err) {
      tar.destroy(err as Error);
    }
  })();
  return coalesce(tar as unknown as AsyncIterable<Uint8Array>);
}

/** Chunks of at least 256 KiB (a tar of small files comes in 512-byte pieces; each would be one upload frame). */
async function* coalesce(source: AsyncIterable<Uint8Array>, min = 256 << 10): AsyncIterable<Uint8Array> {
  let parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of source) {
    parts.push(chunk);
    size += chunk.byteLength;
    if (size >= min) {
      yield Buffer.concat(parts);
      parts = [];
      size = 0;
    }
  }
  if (size > 0) yield Buffer.concat(parts);
}

async function pullAll(ctx: PassContext, pulls: Map<string, TreeEntry>, local: Map<string, TreeEntry>, again: Set<string>): Promise<void> {
  if (pulls.size === 0) return;
  const paths = [...pulls.keys()].sort();
  const expected = new Map<string, TreeEntry | undefined>();
  for (const p of paths) {
    const le = local.get(p);
    // Another kind here: it goes first (it is unchanged since the base, or the pull would be a conflict).
    if (le && le.kind !== pulls.get(p)!.kind && !(await removeLocal(ctx.localRoot, p, le))) again.add(p);
    expected.set(p, le && le.kind === pulls.get(p)!.kind ? le : undefined);
  }
  let done = 0;
  for (let i = 0; i < paths.length; i += BATCH_PATHS) {
    const batch = paths.slice(i, i + BATCH_PATHS).filter((p) => !again.has(p));
    ctx.onProgress?.({ phase: 'download', done, total: paths.length });
    await ctx.remote.fetch(batch, async (tar) => {
      const { placed, skipped } = await unpackInto(ctx.localRoot, tar, expected);
      for (const p of batch) {
        const got = placed.get(p);
        if (!got || skipped.has(p)) {
          again.add(p);
          continue;
        }
        ctx.state.set(p, synced(got.entry, pulls.get(p)!, got.hash));
        ctx.onChange?.({ kind: 'pulled', path: p });
      }
    });
    done += batch.length;
    ctx.onProgress?.({ phase: 'download', done, total: paths.length });
  }
}

function synced(local: TreeEntry, remote: TreeEntry, hash: string): SyncedEntry {
  return { kind: local.kind, mode: local.mode, hash, local: { size: local.size, mtime: local.mtime }, remote: { size: remote.size, mtime: remote.mtime } };
}
