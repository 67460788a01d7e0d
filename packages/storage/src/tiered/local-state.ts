/**
 * What tiered storage keeps on local disk beside the cached images, so that a restart knows what is
 * still to do:
 * ```
 * snapshots/<id>/durable.json      written once the remote manifest is stored (absent: upload pending)
 * snapshot-removals/<id>           a removal whose remote manifest may still be in the bucket
 * ```
 * The durable marker's mtime is also the image's last use (touched by `open`), which orders eviction.
 */
import { mkdir, readdir, readFile, rm, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { fsyncDir, writeJsonAtomically } from '../manifest.js';

/** Contents of `durable.json`. */
export interface DurableMarker {
  /** When the remote manifest was written (ISO 8601). */
  durableAt: string;
  /** Bytes this host's upload added to the bucket (0 for a downloaded image). */
  storedBytes: number;
  /** Chunks the image has, and how many its upload stored (the rest were in the bucket already). */
  chunks: number;
  newChunks: number;
}

export const DURABLE_MARKER_FILE = 'durable.json';

export class TieredLocalState {
  private readonly removalsDir: string;

  constructor(private readonly rootDir: string) {
    this.removalsDir = join(rootDir, 'snapshot-removals');
  }

  private markerPath(snapshotId: string): string {
    return join(this.rootDir, 'snapshots', snapshotId, DURABLE_MARKER_FILE);
  }

  /** The durable marker of a cached image, null when its upload is still pending (or it is not cached). */
  async marker(snapshotId: string): Promise<DurableMarker | null> {
    try {
      return JSON.parse(await readFile(this.markerPath(snapshotId), 'utf8')) as DurableMarker;
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return null;
      throw error;
    }
  }

  /** Mark a cached image durable (atomically, fsynced). */
  async markDurable(snapshotId: string, marker: DurableMarker): Promise<void> {
    await writeJsonAtomically(this.markerPath(snapshotId), marker);
  }

  /** Last use of a durable cached image (epoch ms), null when not durable. */
  async lastUsedMs(snapshotId: string): Promise<number | null> {
    const info = await stat(this.markerPath(snapshotId)).catch(() => null);
    return info ? info.mtimeMs : null;
  }

  /** Record a use of a cached image (eviction takes the least recently used first); a no-op when not durable. */
  async touch(snapshotId: string): Promise<void> {
    const now = new Date();
    await utimes(this.markerPath(snapshotId), now, now).catch(() => undefined);
  }

  /** Record that `snapshotId` was removed (fsynced) before its remote manifest is deleted. */
  async addRemoval(snapshotId: string): Promise<void> {
    await mkdir(this.removalsDir, { recursive: true });
    await writeJsonAtomically(join(this.removalsDir, snapshotId), { removedAt: new Date().toISOString() });
  }

  async clearRemoval(snapshotId: string): Promise<void> {
    await rm(join(this.removalsDir, snapshotId), { force: true });
    await fsyncDir(this.removalsDir).catch(() => undefined);
  }

  async isRemoved(snapshotId: string): Promise<boolean> {
    return stat(join(this.removalsDir, snapshotId)).then(
      () => true,
      () => false,
    );
  }

  /** Ids removed whose remote deletion is not confirmed yet. */
  async removals(): Promise<string[]> {
    return (await readdir(this.removalsDir).catch(() => [] as string[])).filter((name) => !name.startsWith('.')).sort();
  }
}

/** Bytes a directory tree takes on disk (allocated blocks: a sparse file counts what it holds). */
export async function allocatedBytes(dir: string): Promise<number> {
  let total = 0;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await allocatedBytes(path);
    else total += ((await stat(path).catch(() => null))?.blocks ?? 0) * 512;
  }
  return total;
}
