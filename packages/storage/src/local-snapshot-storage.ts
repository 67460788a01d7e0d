/**
 * Snapshots on local disk. Layout under `rootDir`:
 * ```
 * snapshots/<id>/image/          the runtime's checkpoint files (written by the runtime after prepare)
 * snapshots/<id>/manifest.json   written last, atomically, by commit
 * ```
 * The manifest is the commit point: a directory without one is an unfinished write (a crash between
 * prepare and commit, or during remove). Such leftovers are invisible to `open` and `list` and are
 * deleted by {@link LocalSnapshotStorage.sweepIncomplete} during reconcile.
 */
import { RamifyError, notFound } from '@ramify/contracts';
import { SNAPSHOT_FORMAT_VERSION, type SnapshotManifest, type SnapshotStorage } from '@ramify/core';
import { mkdir, readFile, readdir, rm, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { defaultHashConcurrency, mapBounded, sha256File } from './hash.js';
import { MANIFEST_FILE, fsyncDir, fsyncPath, parseManifest, writeManifestAtomically } from './manifest.js';

/**
 * How much `open` checks before handing out an image:
 * - `none`: the manifest only;
 * - `sizes`: every listed file exists with its recorded size (cheap: one stat per file);
 * - `checksums`: sizes, then the sha256 of every file (reads the whole image).
 */
export type SnapshotVerification = 'none' | 'sizes' | 'checksums';

export interface LocalSnapshotStorageOptions {
  /** Directory that holds `snapshots/`; created on first use. */
  rootDir: string;
  /** Default verification of {@link LocalSnapshotStorage.open}; default `sizes`. */
  verifyOnOpen?: SnapshotVerification;
  /** Files hashed at once by commit and checksum verification; default min(4, cores). */
  hashConcurrency?: number;
  /**
   * Wait after a commit before hashing the image's files in the background, ms; default 3000. A resume or
   * fork right after a pause restores that image meanwhile, and would share the CPU and the page cache with
   * the hash (opens check sizes, not hashes, by default).
   */
  hashDelayMs?: number;
}

export interface OpenSnapshotOptions {
  /** Overrides the storage's `verifyOnOpen` for this call. */
  verify?: SnapshotVerification;
}

export interface SweepOptions {
  /** Only delete leftovers whose directory was last modified at least this long ago; default 0. */
  olderThanMs?: number;
}

/** Snapshot ids double as directory names: 1-128 of `[A-Za-z0-9._-]`, not starting with `.`, `_` or `-`. */
const SNAPSHOT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Whether `snapshotId` can name a snapshot (it doubles as a directory and object name). */
export function isValidSnapshotId(snapshotId: string): boolean {
  return SNAPSHOT_ID.test(snapshotId);
}

export class LocalSnapshotStorage implements SnapshotStorage {
  readonly rootDir: string;
  private readonly snapshotsDir: string;
  private readonly verifyOnOpen: SnapshotVerification;
  /** Background hashing of committed images, by snapshot id (waiting for its delay, or running). */
  private readonly hashing = new Map<string, Promise<void>>();
  /** Hashes still waiting for their delay: start one now, or drop it (its snapshot is being removed). */
  private readonly hashWaits = new Map<string, { start: () => void; drop: () => void }>();
  /** Aborts the reads of a background hash that is running, by snapshot id. */
  private readonly hashAborts = new Map<string, AbortController>();
  private readonly hashDelayMs: number;
  /** Snapshots being removed (their background hash must not rewrite the manifest). */
  private readonly removing = new Set<string>();
  private readonly hashConcurrency: number;
  /** Ids prepared by this instance and not yet committed or removed: never swept. */
  private readonly inFlight = new Set<string>();

  constructor(options: LocalSnapshotStorageOptions) {
    this.rootDir = options.rootDir;
    this.snapshotsDir = join(options.rootDir, 'snapshots');
    this.verifyOnOpen = options.verifyOnOpen ?? 'sizes';
    this.hashConcurrency = options.hashConcurrency ?? defaultHashConcurrency();
    this.hashDelayMs = options.hashDelayMs ?? 3000;
  }

  /**
   * A fresh image directory path for `snapshotId` (its parent exists; the directory does not).
   * Leftovers of an earlier unfinished write with the same id are deleted first.
   * Rejects `BAD_REQUEST` for an id that is not a safe directory name, `CONFLICT` if already committed.
   */
  async prepare(snapshotId: string): Promise<{ imageDir: string }> {
    const dir = this.snapshotDir(assertValidId(snapshotId));
    if (await exists(join(dir, MANIFEST_FILE))) {
      throw new RamifyError('CONFLICT', `snapshot '${snapshotId}' already exists`, { snapshotId });
    }
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    this.inFlight.add(snapshotId);
    return { imageDir: join(dir, 'image') };
  }

  /**
   * Seal a written image: list its files, fsync them and their directories (a runtime writes through
   * the page cache; a manifest must never name data that a host crash can take back), write the
   * manifest atomically, then hash the files in the background (streamed, `hashConcurrency` at once).
   * Rejects `INVALID_STATE` when no image was written, `CONFLICT` when already committed,
   * `RUNTIME_ERROR` when the image holds something other than files and directories.
   */
  async commit(input: Omit<SnapshotManifest, 'formatVersion' | 'sizeBytes' | 'files' | 'createdAt'>): Promise<SnapshotManifest> {
    const snapshotId = assertValidId(input.snapshotId);
    const dir = this.snapshotDir(snapshotId);
    const imageDir = join(dir, 'image');
    if (await exists(join(dir, MANIFEST_FILE))) {
      throw new RamifyError('CONFLICT', `snapshot '${snapshotId}' is already committed`, { snapshotId });
    }
    if (!(await isDirectory(imageDir))) {
      throw new RamifyError('INVALID_STATE', `snapshot '${snapshotId}' has no image to commit (expected directory ${imageDir})`, { snapshotId });
    }
    const paths = await listImageFiles(imageDir, snapshotId);
    await mapBounded(paths, this.hashConcurrency, (relative) => fsyncPath(join(imageDir, relative)));
    for (const directory of new Set([imageDir, ...paths.map((relative) => dirname(join(imageDir, relative)))])) await fsyncDir(directory);
    const entries = await Promise.all(paths.map(async (relative) => [relative, { sizeBytes: (await stat(join(imageDir, relative))).size, sha256: null }] as const));
    const files = Object.fromEntries(entries);
    const manifest: SnapshotManifest = {
      formatVersion: SNAPSHOT_FORMAT_VERSION,
      snapshotId,
      runtime: input.runtime,
      templateId: input.templateId,
      parentSnapshotId: input.parentSnapshotId,
      createdAt: new Date().toISOString(),
      sizeBytes: entries.reduce((sum, [, file]) => sum + file.sizeBytes, 0),
      files,
    };
    await writeManifestAtomically(join(dir, MANIFEST_FILE), manifest);
    this.inFlight.delete(snapshotId);
    this.hashing.set(snapshotId, this.hashAfterDelay(manifest));
    return manifest;
  }

  /** {@link hashInBackground} once `hashDelayMs` has passed (or {@link settle} asks); resolves when done or dropped. */
  private hashAfterDelay(manifest: SnapshotManifest): Promise<void> {
    const { snapshotId } = manifest;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => start(), this.hashDelayMs);
      timer.unref();
      const start = (): void => {
        clearTimeout(timer);
        this.hashWaits.delete(snapshotId);
        void this.hashInBackground(manifest).then(resolve);
      };
      const drop = (): void => {
        clearTimeout(timer);
        this.hashWaits.delete(snapshotId);
        this.hashing.delete(snapshotId);
        resolve();
      };
      this.hashWaits.set(snapshotId, { start, drop });
    });
  }

  /**
   * Seal an image written under {@link prepare}'s directory by something other than a runtime (a
   * download from remote storage) whose manifest is known and checked already: every listed file must
   * be there with its size; files and directories are fsynced; `manifest` is written as given (no
   * background hashing: its sha256s are known).
   * Rejects `RUNTIME_ERROR` when a file is missing or of another size, `CONFLICT` when already committed.
   */
  async adopt(manifest: SnapshotManifest): Promise<void> {
    const snapshotId = assertValidId(manifest.snapshotId);
    const dir = this.snapshotDir(snapshotId);
    const imageDir = join(dir, 'image');
    if (await exists(join(dir, MANIFEST_FILE))) throw new RamifyError('CONFLICT', `snapshot '${snapshotId}' is already committed`, { snapshotId });
    await this.verifyImage(imageDir, manifest, 'sizes');
    const paths = Object.keys(manifest.files);
    await mapBounded(paths, this.hashConcurrency, (relative) => fsyncPath(join(imageDir, relative)));
    for (const directory of new Set([imageDir, ...paths.map((relative) => dirname(join(imageDir, relative)))])) await fsyncDir(directory);
    await writeManifestAtomically(join(dir, MANIFEST_FILE), manifest);
    this.inFlight.delete(snapshotId);
  }

  /**
   * Fill in the sha256 of every file of a just-committed image and rewrite its manifest (atomically).
   * Never rejects; a snapshot removed meanwhile is left alone ({@link remove} aborts it and waits for that).
   */
  private async hashInBackground(manifest: SnapshotManifest): Promise<void> {
    const { snapshotId } = manifest;
    const imageDir = join(this.snapshotDir(snapshotId), 'image');
    try {
      const abort = new AbortController();
      this.hashAborts.set(snapshotId, abort);
      const hashed = await mapBounded(Object.keys(manifest.files), this.hashConcurrency, async (relative) => [relative, await sha256File(join(imageDir, relative), abort.signal)] as const);
      if (this.removing.has(snapshotId)) return;
      const files = Object.fromEntries(hashed.map(([relative, sha256]) => [relative, { sizeBytes: manifest.files[relative]!.sizeBytes, sha256 }]));
      await writeManifestAtomically(join(this.snapshotDir(snapshotId), MANIFEST_FILE), { ...manifest, files });
    } catch {
      // The image vanished or the disk failed: the manifest keeps null hashes (sizes are still checked).
    } finally {
      this.hashAborts.delete(snapshotId);
      this.hashing.delete(snapshotId);
    }
  }

  /** Start the hashes still waiting for their delay, and wait for every background hash (tests, shutdown). */
  async settle(): Promise<void> {
    for (const wait of [...this.hashWaits.values()]) wait.start();
    await Promise.all([...this.hashing.values()]);
  }

  /**
   * Local path of a committed image, checked per `options.verify` (default: the storage's
   * `verifyOnOpen`). Rejects `SNAPSHOT_NOT_FOUND` when there is no manifest (absent or unfinished),
   * `RUNTIME_ERROR` for an unknown format version, a malformed manifest, or an image that does not
   * match it (`details.reason`: `size-mismatch`, `checksum-mismatch`, `missing-file`).
   */
  async open(snapshotId: string, options: OpenSnapshotOptions = {}): Promise<{ imageDir: string; manifest: SnapshotManifest }> {
    if (!SNAPSHOT_ID.test(snapshotId)) throw notFound('SNAPSHOT_NOT_FOUND', 'snapshot', snapshotId);
    const dir = this.snapshotDir(snapshotId);
    let text: string;
    try {
      text = await readFile(join(dir, MANIFEST_FILE), 'utf8');
    } catch (error) {
      if (isErrno(error, 'ENOENT')) throw notFound('SNAPSHOT_NOT_FOUND', 'snapshot', snapshotId);
      throw error;
    }
    const manifest = parseManifest(text, snapshotId);
    const imageDir = join(dir, 'image');
    const verify = options.verify ?? this.verifyOnOpen;
    if (verify !== 'none') await this.verifyImage(imageDir, manifest, verify);
    return { imageDir, manifest };
  }

  /** Delete a snapshot's files; a no-op when absent. The manifest goes first, so a crash midway leaves a sweepable leftover. */
  async remove(snapshotId: string): Promise<void> {
    if (!SNAPSHOT_ID.test(snapshotId)) return;
    const dir = this.snapshotDir(snapshotId);
    this.removing.add(snapshotId);
    this.hashWaits.get(snapshotId)?.drop();
    // A hash running now is of no use any more: stop its reads rather than wait for them (a resume collects its pause image).
    this.hashAborts.get(snapshotId)?.abort();
    await this.hashing.get(snapshotId);
    try {
      await unlink(join(dir, MANIFEST_FILE));
      await fsyncDir(dir);
    } catch (error) {
      if (!isErrno(error, 'ENOENT')) throw error;
    }
    await rm(dir, { recursive: true, force: true });
    this.inFlight.delete(snapshotId);
    this.removing.delete(snapshotId);
  }

  /** Ids of committed snapshots, sorted. Directories without a manifest are skipped. */
  async list(): Promise<string[]> {
    const ids: string[] = [];
    for (const name of await this.snapshotDirNames()) {
      if (await exists(join(this.snapshotDir(name), MANIFEST_FILE))) ids.push(name);
    }
    return ids.sort();
  }

  /**
   * Delete unfinished snapshot directories (no manifest), except those prepared by this instance and
   * not yet committed. Meant for reconcile after a restart.
   * @returns the ids deleted, sorted.
   */
  async sweepIncomplete(options: SweepOptions = {}): Promise<string[]> {
    const cutoff = Date.now() - (options.olderThanMs ?? 0);
    const removed: string[] = [];
    for (const name of await this.snapshotDirNames()) {
      if (this.inFlight.has(name)) continue;
      const dir = this.snapshotDir(name);
      if (await exists(join(dir, MANIFEST_FILE))) continue;
      const info = await stat(dir).catch(() => null);
      if (!info || info.mtimeMs > cutoff) continue;
      await rm(dir, { recursive: true, force: true });
      removed.push(name);
    }
    return removed.sort();
  }

  private snapshotDir(snapshotId: string): string {
    return join(this.snapshotsDir, snapshotId);
  }

  private async snapshotDirNames(): Promise<string[]> {
    try {
      const entries = await readdir(this.snapshotsDir, { withFileTypes: true });
      return entries.filter((entry) => entry.isDirectory() && SNAPSHOT_ID.test(entry.name)).map((entry) => entry.name);
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return [];
      throw error;
    }
  }

  private async verifyImage(imageDir: string, manifest: SnapshotManifest, verify: 'sizes' | 'checksums'): Promise<void> {
    const snapshotId = manifest.snapshotId;
    const corrupt = (file: string, reason: string, message: string): RamifyError =>
      new RamifyError('RUNTIME_ERROR', `snapshot '${snapshotId}' is corrupt: ${file}: ${message}`, { snapshotId, file, reason });
    const files = Object.entries(manifest.files);
    for (const [relative, expected] of files) {
      const info = await stat(join(imageDir, relative)).catch((error: unknown) => {
        if (isErrno(error, 'ENOENT')) throw corrupt(relative, 'missing-file', 'missing');
        throw error;
      });
      if (info.size !== expected.sizeBytes) {
        throw corrupt(relative, 'size-mismatch', `size ${info.size} bytes, manifest says ${expected.sizeBytes}`);
      }
    }
    if (verify !== 'checksums') return;
    await mapBounded(files, this.hashConcurrency, async ([relative, expected]) => {
      if (expected.sha256 === null) return; // not hashed yet (background): sizes were checked above
      const actual = await sha256File(join(imageDir, relative));
      if (actual !== expected.sha256) throw corrupt(relative, 'checksum-mismatch', `sha256 ${actual}, manifest says ${expected.sha256}`);
    });
  }
}

/** Relative paths (with `/`) of every regular file under `imageDir`, sorted. */
async function listImageFiles(imageDir: string, snapshotId: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (relative: string): Promise<void> => {
    const entries = await readdir(join(imageDir, relative), { withFileTypes: true });
    for (const entry of entries) {
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile()) out.push(path);
      else throw new RamifyError('RUNTIME_ERROR', `snapshot '${snapshotId}': image entry ${path} is neither a file nor a directory`, { snapshotId, file: path });
    }
  };
  await walk('');
  return out.sort();
}

function assertValidId(snapshotId: string): string {
  if (!SNAPSHOT_ID.test(snapshotId)) {
    throw new RamifyError('BAD_REQUEST', `invalid snapshot id '${snapshotId}': expected 1-128 of [A-Za-z0-9._-], starting with a letter or digit`, { snapshotId });
  }
  return snapshotId;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    (error: unknown) => {
      if (isErrno(error, 'ENOENT')) return false;
      throw error;
    },
  );
}

async function isDirectory(path: string): Promise<boolean> {
  return stat(path).then(
    (info) => info.isDirectory(),
    () => false,
  );
}

function isErrno(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}
