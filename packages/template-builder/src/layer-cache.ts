/**
 * The on-disk, content-addressed cache of template root filesystems. Layout under `templatesDir`:
 * ```
 * layers/rootfs-<key>/rootfs/        layer A: Debian minbase + packages (mmdebstrap)
 * layers/rootfs-<key>/layer.json
 * layers/files-<key>/rootfs/         layer B: A + files, agent (the template's rootfs)
 * layers/files-<key>/layer.json
 * layers/.tmp-<kind>-<key>-<rand>/   a layer being built; renamed into place when complete
 * specs/<specHash>.json              flattened spec of each built template (parents of later builds)
 * ```
 * A layer directory is complete once it exists under its final name (the rename is the commit) and
 * is never modified afterwards: template images refer to the `files` rootfs by path.
 */
import { RamifyError, TemplateSpec } from '@ramify/contracts';
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, open, readFile, readdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runTool } from './run-tool.js';
import { removeTreeSafely } from './safe-remove.js';

export type LayerKind = 'rootfs' | 'files';

/** A complete layer. */
export interface Layer {
  kind: LayerKind;
  key: string;
  /** The layer's root filesystem directory. */
  rootfsDir: string;
  /** Bytes of the files in `rootfsDir` (apparent sizes, hard links counted once). */
  sizeBytes: number;
  /** ms since the epoch. */
  createdAt: number;
}

interface LayerMeta {
  formatVersion: 1;
  kind: LayerKind;
  key: string;
  sizeBytes: number;
  createdAt: number;
  /** What went into the layer, for people reading the cache. */
  description: unknown;
}

const TEMP_PREFIX = '.tmp-';

export class LayerCache {
  readonly layersDir: string;
  readonly specsDir: string;
  /** Builds running in this process, by `<kind>-<key>`: a second request waits for the first. */
  private readonly building = new Map<string, Promise<Layer>>();

  constructor(readonly templatesDir: string) {
    this.layersDir = join(templatesDir, 'layers');
    this.specsDir = join(templatesDir, 'specs');
  }

  /** The complete layer, or null when it is not in the cache. */
  async get(kind: LayerKind, key: string): Promise<Layer | null> {
    const dir = join(this.layersDir, `${kind}-${key}`);
    let meta: LayerMeta;
    try {
      meta = JSON.parse(await readFile(join(dir, 'layer.json'), 'utf8')) as LayerMeta;
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return null;
      throw error;
    }
    return { kind, key, rootfsDir: join(dir, 'rootfs'), sizeBytes: meta.sizeBytes, createdAt: meta.createdAt };
  }

  /**
   * Build a layer unless it is cached. `build` receives a fresh temporary rootfs path (not yet
   * existing; its parent does) and must leave the finished root filesystem there; on success the
   * layer is measured and renamed into place, on failure its temporary directory is deleted.
   * Concurrent calls for one layer share a single build.
   */
  async ensure(kind: LayerKind, key: string, description: unknown, build: (rootfsDir: string) => Promise<void>): Promise<{ layer: Layer; cached: boolean }> {
    const existing = await this.get(kind, key);
    if (existing) return { layer: existing, cached: true };
    const id = `${kind}-${key}`;
    let pending = this.building.get(id);
    if (!pending) {
      pending = this.buildLayer(kind, key, description, build).finally(() => this.building.delete(id));
      this.building.set(id, pending);
    }
    return { layer: await pending, cached: false };
  }

  /** Delete temporary directories left by builds that died (not those of builds running in this process). */
  async sweepTemporary(): Promise<string[]> {
    const names = await readdir(this.layersDir).catch(() => [] as string[]);
    const active = [...this.building.keys()].map((id) => `${TEMP_PREFIX}${id}-`);
    const removed: string[] = [];
    for (const name of names) {
      if (!name.startsWith(TEMP_PREFIX) || active.some((prefix) => name.startsWith(prefix))) continue;
      await removeTreeSafely(join(this.layersDir, name));
      removed.push(name);
    }
    return removed;
  }

  /** Store the flattened spec of a built template under its spec hash. */
  async saveSpec(specHash: string, spec: TemplateSpec): Promise<void> {
    await mkdir(this.specsDir, { recursive: true });
    const path = join(this.specsDir, `${specHash}.json`);
    const temp = `${path}.tmp-${randomBytes(4).toString('hex')}`;
    await writeFile(temp, JSON.stringify(spec));
    await rename(temp, path);
  }

  /** The flattened spec stored for `specHash`, or null. Rejects `INTERNAL` when the stored file is invalid. */
  async loadSpec(specHash: string): Promise<TemplateSpec | null> {
    if (!/^[0-9a-f]{64}$/.test(specHash)) return null;
    let text: string;
    try {
      text = await readFile(join(this.specsDir, `${specHash}.json`), 'utf8');
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return null;
      throw error;
    }
    const parsed = TemplateSpec.safeParse(JSON.parse(text));
    if (!parsed.success) throw new RamifyError('INTERNAL', `stored template spec ${specHash} is invalid: ${parsed.error.message}`);
    return parsed.data;
  }

  private async buildLayer(kind: LayerKind, key: string, description: unknown, build: (rootfsDir: string) => Promise<void>): Promise<Layer> {
    await mkdir(this.layersDir, { recursive: true });
    const temp = join(this.layersDir, `${TEMP_PREFIX}${kind}-${key}-${randomBytes(4).toString('hex')}`);
    const final = join(this.layersDir, `${kind}-${key}`);
    await mkdir(temp);
    try {
      await build(join(temp, 'rootfs'));
      const meta: LayerMeta = { formatVersion: 1, kind, key, sizeBytes: await treeSize(join(temp, 'rootfs')), createdAt: Date.now(), description };
      await writeFile(join(temp, 'layer.json'), `${JSON.stringify(meta, null, 2)}\n`);
      // Flush the whole filesystem (mmdebstrap and cp do not fsync) so a crash after the rename
      // cannot leave a complete-looking layer with missing data.
      await runTool(['sync', '--file-system', temp], { step: `${kind} layer` });
      await syncPath(temp);
      try {
        await rename(temp, final);
      } catch (error) {
        const code = (error as { code?: string }).code;
        // Another process finished the same layer first: theirs is as good as ours.
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
        await removeTreeSafely(temp);
      }
    } catch (error) {
      await removeTreeSafely(temp).catch(() => undefined);
      throw error;
    }
    const layer = await this.get(kind, key);
    if (!layer) throw new RamifyError('INTERNAL', `layer ${kind}-${key} vanished right after it was built`);
    return layer;
  }
}

/** Sum of apparent file sizes under `dir`, not following symlinks, hard links counted once. */
async function treeSize(dir: string): Promise<number> {
  const seen = new Set<string>();
  let total = 0;
  const walk = async (path: string): Promise<void> => {
    const info = await lstat(path);
    if (info.nlink > 1 && !info.isDirectory()) {
      const id = `${info.dev}:${info.ino}`;
      if (seen.has(id)) return;
      seen.add(id);
    }
    total += info.size;
    if (info.isDirectory()) {
      const names = await readdir(path);
      await Promise.all(names.map((name) => walk(join(path, name))));
    }
  };
  await walk(dir);
  return total;
}

/** fsync a directory. */
async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
