/**
 * The remote manifest: how a snapshot is stored in a bucket. The snapshot's own manifest (the one
 * `open` returns, every sha256 filled in) plus, per file, its chunks in order. Written last by an
 * upload: a manifest in the bucket means every chunk it lists was stored before it.
 *
 * ```json
 * { "formatVersion": 1,
 *   "chunking": { "algorithm": "fastcdc-gear-sha256-v1", "minBytes": 262144, "avgBytes": 1048576, "maxBytes": 4194304 },
 *   "snapshot": { ...SnapshotManifest... },
 *   "files": { "checkpoint.img": { "sizeBytes": 5169359, "sha256": "…",
 *                                  "chunks": [{ "sha256": "…", "sizeBytes": 1236992 }, …] } },
 *   "uploadedAt": "2026-12-06T04:29:09.000Z" }
 * ```
 * A chunk of zeros is listed but never stored (it reads back as a hole: sparse microVM RAM files stay sparse).
 */
import { RamifyError } from '@ramify/contracts';
import type { SnapshotManifest } from '@ramify/core';
import { z } from 'zod';
import { ManifestSchema } from '../manifest.js';

/** Version of the remote manifest's own format; readers reject any other. */
export const REMOTE_MANIFEST_VERSION = 1;

const Sha256 = z.string().regex(/^[0-9a-f]{64}$/);
const Size = z.number().int().nonnegative();

const RemoteManifestSchema = z.strictObject({
  formatVersion: z.literal(REMOTE_MANIFEST_VERSION),
  chunking: z.strictObject({ algorithm: z.string().min(1), minBytes: Size, avgBytes: Size, maxBytes: Size }),
  /** The snapshot's manifest, every sha256 known. */
  snapshot: ManifestSchema.extend({ files: z.record(z.string().min(1), z.strictObject({ sizeBytes: Size, sha256: Sha256 })) }),
  files: z.record(z.string().min(1), z.strictObject({ sizeBytes: Size, sha256: Sha256, chunks: z.array(z.strictObject({ sha256: Sha256, sizeBytes: Size })) })),
  uploadedAt: z.string(),
});

/** A chunk of a file, in file order. */
export interface ChunkRef {
  /** sha256 of the chunk's uncompressed bytes: its name in the bucket. */
  sha256: string;
  sizeBytes: number;
}

export interface RemoteFile {
  sizeBytes: number;
  sha256: string;
  chunks: ChunkRef[];
}

export interface RemoteManifest {
  formatVersion: number;
  /** How the files were cut (informational: a reader needs only the chunk list). */
  chunking: { algorithm: string; minBytes: number; avgBytes: number; maxBytes: number };
  /** The snapshot's manifest, with every file's sha256. */
  snapshot: SnapshotManifest;
  files: Record<string, RemoteFile>;
  uploadedAt: string;
}

/**
 * Parse a remote manifest's text and check it against itself (sizes of chunks add up to each file's
 * size; the snapshot's files are the chunked files).
 * @throws RamifyError `RUNTIME_ERROR` for bad JSON, an unknown `formatVersion` (never guessed), a wrong
 *   field, or a manifest that names another snapshot.
 */
export function parseRemoteManifest(text: string, snapshotId: string): RemoteManifest {
  const fail = (message: string, extra: Record<string, unknown> = {}): RamifyError =>
    new RamifyError('RUNTIME_ERROR', `snapshot '${snapshotId}': remote manifest ${message}`, { snapshotId, ...extra });
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw fail(`is not valid JSON (${(error as Error).message})`);
  }
  const version = typeof raw === 'object' && raw !== null ? (raw as { formatVersion?: unknown }).formatVersion : undefined;
  if (version !== REMOTE_MANIFEST_VERSION) {
    throw fail(`has unsupported format version ${JSON.stringify(version)} (this Ramify reads version ${REMOTE_MANIFEST_VERSION} only)`, { formatVersion: version ?? null });
  }
  const parsed = RemoteManifestSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw fail(`is invalid at ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  const manifest = parsed.data;
  if (manifest.snapshot.snapshotId !== snapshotId) throw fail(`names snapshot '${manifest.snapshot.snapshotId}'`);
  const names = Object.keys(manifest.files).sort();
  if (names.join('\0') !== Object.keys(manifest.snapshot.files).sort().join('\0')) throw fail('lists other files than its snapshot');
  for (const name of names) {
    const file = manifest.files[name]!;
    const chunked = file.chunks.reduce((sum, chunk) => sum + chunk.sizeBytes, 0);
    if (chunked !== file.sizeBytes || manifest.snapshot.files[name]!.sizeBytes !== file.sizeBytes) throw fail(`is inconsistent for ${name}: chunks add up to ${chunked} bytes, file is ${file.sizeBytes}`);
  }
  return manifest;
}

/** The manifest's text as stored (stable key order, one line). */
export function serializeRemoteManifest(manifest: RemoteManifest): string {
  return `${JSON.stringify(manifest)}\n`;
}
