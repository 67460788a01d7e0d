/** Images as a runtime writes them, and the assertions the conformance suite makes on them. */
import { isRamifyError } from '@ramify/contracts';
import type { SnapshotStorage } from '@ramify/core';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** An image as a runtime writes it: relative path → bytes. */
export type ImageFiles = Record<string, Buffer>;

export const commitInput = (snapshotId: string, parentSnapshotId: string | null = null) => ({ snapshotId, runtime: 'gvisor' as const, templateId: 'tpl_conformance', parentSnapshotId });

/** A small image with a nested file, an empty file and a multi-chunk file. */
export function sampleImage(bigBytes = 9 * 1024 * 1024 + 123): ImageFiles {
  return { 'checkpoint.img': randomBytes(bigBytes), 'pages/meta.json': Buffer.from('{"a":1}'), 'empty.bin': Buffer.alloc(0) };
}

/** prepare + write `files` + commit. */
export async function writeAndCommit(storage: SnapshotStorage, snapshotId: string, files: ImageFiles, parentSnapshotId: string | null = null): Promise<void> {
  const { imageDir } = await storage.prepare(snapshotId);
  await writeImageFiles(imageDir, files);
  await storage.commit(commitInput(snapshotId, parentSnapshotId));
}

export async function writeImageFiles(imageDir: string, files: ImageFiles): Promise<void> {
  for (const [relative, data] of Object.entries(files)) {
    await mkdir(dirname(join(imageDir, relative)), { recursive: true });
    await writeFile(join(imageDir, relative), data);
  }
}

/** Every file under `imageDir`, by relative path. */
export async function readImageFiles(imageDir: string, relative = ''): Promise<ImageFiles> {
  const out: ImageFiles = {};
  for (const entry of await readdir(join(imageDir, relative), { withFileTypes: true })) {
    const path = relative ? `${relative}/${entry.name}` : entry.name;
    if (entry.isDirectory()) Object.assign(out, await readImageFiles(imageDir, path));
    else out[path] = await readFile(join(imageDir, path));
  }
  return out;
}

/** Assert that `storage.open(id)` gives exactly `files`, with a manifest that lists them. */
export async function assertOpensAs(storage: SnapshotStorage, snapshotId: string, files: ImageFiles): Promise<void> {
  const { imageDir, manifest } = await storage.open(snapshotId);
  const actual = await readImageFiles(imageDir);
  assert.deepEqual(Object.keys(actual).sort(), Object.keys(files).sort());
  for (const [path, data] of Object.entries(files)) {
    assert.ok(actual[path]!.equals(data), `${path}: bytes differ`);
    assert.equal(manifest.files[path]?.sizeBytes, data.length);
    const sha = manifest.files[path]?.sha256;
    if (sha !== null && sha !== undefined) assert.equal(sha, sha256(data), `${path}: manifest sha256`);
  }
  assert.equal(manifest.sizeBytes, Object.values(files).reduce((sum, data) => sum + data.length, 0));
}

export const sha256 = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

export function assertCode(code: string, pattern?: RegExp): (error: unknown) => boolean {
  return (error) => {
    assert.ok(isRamifyError(error), `expected a RamifyError ${code}, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    if (pattern) assert.match(error.message, pattern);
    return true;
  };
}

