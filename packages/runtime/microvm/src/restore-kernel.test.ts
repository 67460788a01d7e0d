/** The restore kernel stub, derived from a synthetic bzImage header (the real kernel's restores run in microvm-runtime.test.ts). */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { restoreKernelStub } from './restore-kernel.js';

const dir = await mkdtemp(join(tmpdir(), 'ramify-restore-kernel-'));
after(() => rm(dir, { recursive: true, force: true }));

/** A bzImage-shaped file: `setupSects` setup sectors after the boot sector, then `payloadBytes` of kernel. */
async function fakeBzImage(name: string, setupSects: number, payloadBytes: number): Promise<{ path: string; bytes: Buffer }> {
  const bytes = randomBytes((Math.max(setupSects, 4) + 1) * 512 + payloadBytes);
  bytes[0x1f1] = setupSects;
  bytes.writeUInt32LE(0x53726448, 0x202);
  const path = join(dir, name);
  await writeFile(path, bytes);
  return { path, bytes };
}

test('the stub is the setup part plus one page of payload, written once beside the kernel', async () => {
  const { path, bytes } = await fakeBzImage('vmlinuz', 30, 1 << 20);
  const stub = await restoreKernelStub(path);
  assert.equal(stub, `${path}.restore-stub`);
  const content = await readFile(stub);
  assert.equal(content.length, 31 * 512 + 4096);
  assert.deepEqual(content, bytes.subarray(0, content.length));
  const { mtimeMs } = await stat(stub);
  assert.equal(await restoreKernelStub(path), stub);
  assert.equal((await stat(stub)).mtimeMs, mtimeMs, 'an existing stub is reused');
});

test('setup_sects 0 means 4 sectors (boot protocol)', async () => {
  const { path } = await fakeBzImage('old-vmlinuz', 0, 8192);
  assert.equal((await readFile(await restoreKernelStub(path))).length, 5 * 512 + 4096);
});

test('a file without the boot protocol header is refused with RUNTIME_ERROR', async () => {
  const path = join(dir, 'not-a-kernel');
  await writeFile(path, Buffer.alloc(64 * 1024));
  await assert.rejects(restoreKernelStub(path), (e: Error & { code?: string }) => e.code === 'RUNTIME_ERROR' && /not a bzImage/.test(e.message));
  const truncated = await fakeBzImage('truncated', 30, 100);
  await assert.rejects(restoreKernelStub(truncated.path), (e: Error & { code?: string }) => e.code === 'RUNTIME_ERROR' && /shorter/.test(e.message));
});
