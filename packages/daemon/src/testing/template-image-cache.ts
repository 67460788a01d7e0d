/**
 * A machine-wide cache of the test template image: the gVisor checkpoint of the base rootfs booted idle,
 * which every real daemon test registers as template `base` ({@link registerRootfsTemplate}). Building
 * it boots runsc, connects to the agent and checkpoints (~3.5 s), ~25 times per `npm test`; the image is
 * portable between daemons (the multi-host tests build it on one daemon and restore it on hosts with
 * other network prefixes), so only the first registration on a machine per {@link ImageCacheKeyParts}
 * builds it and the others copy its files into their own snapshot storage. Test support only.
 *
 * Layout: `<cacheDir>/test-template-images/<key>/` (`cacheDir`: `RAMIFY_CACHE_DIR`, else
 * `/var/cache/ramify`, where the test rootfs lives too) holds `image/` (the runtime's checkpoint files)
 * and `manifest.json` (the key's parts, each file's size and sha256). An entry is written into a temp
 * directory and renamed into place, so a reader never sees half of one; of two processes that race,
 * the second rename fails and its copy is dropped. A copy whose size or sha256 differs from the manifest
 * is dropped, the entry discarded, and the image built instead (and cached again).
 *
 * Only gVisor images are cached: a microVM image's qcow2 overlays may name absolute paths of the daemon
 * that made them. `RAMIFY_TEST_IMAGE_CACHE=off` builds every image (as before the cache). Every
 * `npm test` still builds one template image from scratch: the conformance suite builds `base` through
 * `POST /v1/templates` on a fresh daemon (packages/conformance/src/suite.ts), which this cache does not
 * serve.
 */
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { copyFile, mkdir, readFile, readdir, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Core, SandboxResources, SnapshotManifest } from '@ramify/core';
import { sha256File } from '@ramify/storage';
import { templateInitArgv } from '@ramify/template-builder';
import { resolveCacheDir } from '../config.js';

/** Bumped when the entry layout or what an image depends on changes in a way the other parts miss. */
export const TEST_IMAGE_CACHE_FORMAT = 1;

/** Everything the cached image depends on; its sha256 names the entry. */
export interface ImageCacheKeyParts {
  format: number;
  runtime: string;
  /** The runtime's version line as it reports it at startup (`runtime ready`): gVisor's `runsc --version`. */
  runtimeVersion: string;
  imageFormat: string | null;
  /** The runtime's capabilities (agent channel, OOM killer, ...): they shape the init argv and the image. */
  capabilities: unknown;
  /** The rootfs directory: RAMIFY_TEST_ROOTFS is content-addressed (`.../layers/files-<hash>/rootfs`, agent bundle included). */
  rootfsDir: string;
  resources: SandboxResources;
  initArgv: string[];
  /**
   * sha256 over the compiled code that writes the sandbox's OCI bundle and its network namespace
   * (`@ramify/runtime-gvisor`, `@ramify/network`): a branch that changes either gets images of its own.
   */
  hostCode: string;
}

interface EntryManifest {
  parts: ImageCacheKeyParts;
  createdAt: string;
  files: Record<string, { sizeBytes: number; sha256: string }>;
}

/** The entry's files did not match its manifest (a partial or damaged entry). */
class CorruptEntryError extends Error {}

/**
 * The image of `rootfsDir` booted idle on `core`'s default runtime (`runtimes[0]`), committed to `core.storage` as
 * `snapshotId`: copied from the machine's cache when it holds one for the same key, else made by
 * `build` (which must prepare and commit `snapshotId` itself) and then cached. A commit on an S3-backed
 * storage queues the upload as for a built image. Rejects with `build`'s or the storage's errors; a
 * failure to write the cache is ignored (the next registration builds again).
 */
export async function cachedTemplateImage(
  core: Pick<Core, 'runtimes' | 'storage'>,
  image: { rootfsDir: string; snapshotId: string; templateId: string; resources: SandboxResources },
  build: () => Promise<SnapshotManifest>,
): Promise<SnapshotManifest> {
  const runtime = core.runtimes[0]!;
  if (process.env.RAMIFY_TEST_IMAGE_CACHE === 'off' || runtime.name !== 'gvisor') return build();
  const parts: ImageCacheKeyParts = {
    format: TEST_IMAGE_CACHE_FORMAT, runtime: runtime.name, runtimeVersion: runtime.summary ?? 'unknown', imageFormat: runtime.imageFormat ?? null,
    capabilities: runtime.capabilities, rootfsDir: image.rootfsDir, resources: image.resources, initArgv: templateInitArgv(runtime), hostCode: await hostCodeSha256(),
  };
  const root = join(resolveCacheDir(), 'test-template-images');
  const entryDir = join(root, createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 32));
  const entry = await readEntry(entryDir);
  if (entry) {
    const { imageDir } = await core.storage.prepare(image.snapshotId);
    try {
      await copyVerified(join(entryDir, 'image'), imageDir, entry.files);
      const now = new Date();
      await utimes(join(entryDir, 'manifest.json'), now, now).catch(() => undefined); // last use, for pruneStale
      return await core.storage.commit({ snapshotId: image.snapshotId, runtime: runtime.name, templateId: image.templateId, parentSnapshotId: null });
    } catch (error) {
      await core.storage.remove(image.snapshotId);
      if (!(error instanceof CorruptEntryError) && !isErrno(error, 'ENOENT')) throw error;
      await discard(root, entryDir);
    }
  }
  const manifest = await build();
  await pruneStale(root).catch(() => undefined);
  await storeEntry(root, entryDir, parts, (await core.storage.open(image.snapshotId)).imageDir, Object.keys(manifest.files)).catch(() => undefined);
  return manifest;
}

/** The entry's manifest, or null when there is none (or it cannot be parsed: the entry is then rebuilt). */
async function readEntry(entryDir: string): Promise<EntryManifest | null> {
  const text = await readFile(join(entryDir, 'manifest.json'), 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const parsed = JSON.parse(text) as Partial<EntryManifest>;
    return parsed.files && typeof parsed.files === 'object' ? (parsed as EntryManifest) : null;
  } catch {
    return null;
  }
}

/**
 * Copy each file of `files` from `fromDir` to `toDir` (a reflink where the filesystem has them, else a
 * plain copy) and check the copy's size and sha256. Rejects `CorruptEntryError` on a mismatch.
 */
async function copyVerified(fromDir: string, toDir: string, files: EntryManifest['files']): Promise<void> {
  for (const [relative, expected] of Object.entries(files)) {
    const target = join(toDir, relative);
    await mkdir(dirname(target), { recursive: true });
    await copyFile(join(fromDir, relative), target, constants.COPYFILE_FICLONE);
    if ((await stat(target)).size !== expected.sizeBytes || (await sha256File(target)) !== expected.sha256) {
      throw new CorruptEntryError(`cached image file ${relative} does not match its manifest`);
    }
  }
}

/** Write the entry for `imageDir` into a temp directory under `root` and rename it to `entryDir`; a no-op when another process won. */
async function storeEntry(root: string, entryDir: string, parts: ImageCacheKeyParts, imageDir: string, relatives: string[]): Promise<void> {
  const temp = join(root, `.tmp-${randomBytes(8).toString('hex')}`);
  try {
    const files: EntryManifest['files'] = {};
    for (const relative of relatives) {
      const target = join(temp, 'image', relative);
      await mkdir(dirname(target), { recursive: true });
      await copyFile(join(imageDir, relative), target, constants.COPYFILE_FICLONE);
      files[relative] = { sizeBytes: (await stat(target)).size, sha256: await sha256File(target) };
    }
    const manifest: EntryManifest = { parts, createdAt: new Date().toISOString(), files };
    await writeFile(join(temp, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    await rename(temp, entryDir).catch((error: unknown) => {
      if (!isErrno(error, 'ENOTEMPTY') && !isErrno(error, 'EEXIST')) throw error;
    });
  } finally {
    await rm(temp, { recursive: true, force: true });
  }
}

/** An entry unused this long is deleted (runsc upgrades and code changes leave old keys behind). */
const ENTRY_UNUSED_MS = 14 * 24 * 3600_000;
/** A temp or trash directory this old was left by a process that died. */
const LEFTOVER_MS = 3600_000;

/** Delete entries unused for {@link ENTRY_UNUSED_MS} (by their manifest's mtime) and leftovers older than {@link LEFTOVER_MS}. */
async function pruneStale(root: string): Promise<void> {
  const now = Date.now();
  for (const name of await readdir(root).catch(() => [])) {
    const leftover = name.startsWith('.tmp-') || name.startsWith('.trash-');
    const info = await stat(leftover ? join(root, name) : join(root, name, 'manifest.json')).catch(() => null);
    if (info && now - info.mtimeMs > (leftover ? LEFTOVER_MS : ENTRY_UNUSED_MS)) await discard(root, join(root, name));
  }
}

/** Move a bad entry out of the way (atomically: a reader sees it whole or not at all), then delete it. */
async function discard(root: string, entryDir: string): Promise<void> {
  const trash = join(root, `.trash-${randomBytes(8).toString('hex')}`);
  if (await rename(entryDir, trash).then(() => true, () => false)) await rm(trash, { recursive: true, force: true });
}

let hostCode: Promise<string> | undefined;

/** sha256 over the non-test `.js` files under the gVisor runtime's and the network's `dist/` (computed once per process). */
function hostCodeSha256(): Promise<string> {
  hostCode ??= (async () => {
    const require = createRequire(import.meta.url);
    const hash = createHash('sha256');
    for (const pkg of ['@ramify/runtime-gvisor', '@ramify/network']) {
      const dist = dirname(require.resolve(pkg));
      for (const name of (await readdir(dist, { recursive: true })).filter((n) => n.endsWith('.js') && !n.endsWith('.test.js')).sort()) {
        hash.update(`${pkg}/${name}\0`).update(await readFile(join(dist, name)));
      }
    }
    return hash.digest('hex');
  })();
  return hostCode;
}

function isErrno(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}
