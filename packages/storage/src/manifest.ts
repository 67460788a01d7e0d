/**
 * `manifest.json` of a snapshot: parsing (strict, version-checked) and atomic writing.
 * A snapshot directory without a manifest is an unfinished write and does not count as a snapshot.
 */
import { RamifyError, RuntimeName } from '@ramify/contracts';
import { SNAPSHOT_FORMAT_VERSION, type SnapshotManifest } from '@ramify/core';
import { randomBytes } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';

/** File name of the manifest inside a snapshot directory. */
export const MANIFEST_FILE = 'manifest.json';
/** Prefix of the temporary file a manifest is written to before its rename. */
export const MANIFEST_TEMP_PREFIX = '.manifest.json.tmp-';

/** The schema of a snapshot's manifest (also embedded in the remote manifest). */
export const ManifestSchema = z.strictObject({
  formatVersion: z.literal(SNAPSHOT_FORMAT_VERSION),
  snapshotId: z.string().min(1),
  runtime: RuntimeName,
  templateId: z.string(),
  parentSnapshotId: z.string().nullable(),
  createdAt: z.string(),
  sizeBytes: z.number().int().nonnegative(),
  files: z.record(z.string().min(1), z.strictObject({ sizeBytes: z.number().int().nonnegative(), sha256: z.string().regex(/^[0-9a-f]{64}$/).nullable() })),
});

/**
 * Parse a manifest's text. Rejects `RUNTIME_ERROR` when the JSON is malformed, when `formatVersion`
 * is not {@link SNAPSHOT_FORMAT_VERSION} (never guessed), or when a field is missing or wrong.
 */
export function parseManifest(text: string, snapshotId: string): SnapshotManifest {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new RamifyError('RUNTIME_ERROR', `snapshot '${snapshotId}': manifest is not valid JSON (${(error as Error).message})`, { snapshotId });
  }
  const version = typeof raw === 'object' && raw !== null ? (raw as { formatVersion?: unknown }).formatVersion : undefined;
  if (version !== SNAPSHOT_FORMAT_VERSION) {
    throw new RamifyError(
      'RUNTIME_ERROR',
      `snapshot '${snapshotId}': unsupported manifest format version ${JSON.stringify(version)} (this Ramify reads version ${SNAPSHOT_FORMAT_VERSION} only)`,
      { snapshotId, formatVersion: version ?? null },
    );
  }
  const parsed = ManifestSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new RamifyError('RUNTIME_ERROR', `snapshot '${snapshotId}': invalid manifest at ${issue.path.join('.') || '(root)'}: ${issue.message}`, { snapshotId });
  }
  if (parsed.data.snapshotId !== snapshotId) {
    throw new RamifyError('RUNTIME_ERROR', `snapshot '${snapshotId}': manifest names snapshot '${parsed.data.snapshotId}'`, { snapshotId });
  }
  return parsed.data;
}

/**
 * Write `manifest` to `path` atomically: a temporary file in the same directory is written and
 * fsynced, then renamed over `path`, then the directory is fsynced. Readers see either no manifest
 * or the whole one.
 */
export async function writeManifestAtomically(path: string, manifest: SnapshotManifest): Promise<void> {
  await writeJsonAtomically(path, manifest);
}

/** Write `value` as indented JSON to `path` atomically and durably (see {@link writeManifestAtomically}). */
export async function writeJsonAtomically(path: string, value: unknown): Promise<void> {
  const dir = dirname(path);
  const temp = join(dir, `${MANIFEST_TEMP_PREFIX}${randomBytes(6).toString('hex')}`);
  try {
    const handle = await open(temp, 'wx', 0o644);
    try {
      await handle.writeFile(`${JSON.stringify(value, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  await fsyncDir(dir);
}

/** fsync a directory so a rename in it is durable. */
export async function fsyncDir(dir: string): Promise<void> {
  await fsyncPath(dir);
}

/** fsync a file or directory: its data and metadata are on disk when this resolves. */
export async function fsyncPath(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
