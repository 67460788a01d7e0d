/**
 * The discard guard and the RAM-file sparsifier on real files, without a VM: under the guard a
 * one-page `PUNCH_HOLE|KEEP_SIZE` (the balloon's) succeeds without touching the file while larger
 * punches still work; `digZeroPages` turns exactly the zero pages into holes and keeps the content.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { discardGuardArgv } from './discard-guard.js';
import { digZeroPages } from './sparse-ram.js';

const PAGE = 4096;
let dir = '';
after(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function scratch(): Promise<string> {
  dir ||= await mkdtemp(join(tmpdir(), 'rvr-guard-'));
  return dir;
}

const allocated = async (path: string): Promise<number> => (await stat(path)).blocks * 512;

test('under the discard guard a one-page hole punch is a no-op that reports success; other punches work', async () => {
  const file = join(await scratch(), 'ram');
  await writeFile(file, Buffer.alloc(16 * PAGE, 7));
  const guard = discardGuardArgv();
  const punch = (offset: number, length: number, guarded: boolean): number => {
    const argv = [...(guarded ? guard : []), 'fallocate', '--punch-hole', '--offset', String(offset), '--length', String(length), file];
    return spawnSync(argv[0]!, argv.slice(1)).status ?? -1;
  };
  const before = await allocated(file);
  assert.equal(punch(0, PAGE, true), 0, 'the guarded punch reports success');
  assert.equal(await allocated(file), before, 'and leaves the file alone');
  assert.equal(punch(4 * PAGE, 4 * PAGE, true), 0);
  assert.equal(await allocated(file), before - 4 * PAGE, 'a larger punch goes through under the guard');
  assert.equal(punch(0, PAGE, false), 0);
  assert.equal(await allocated(file), before - 5 * PAGE, 'without the guard the page punch happens');
  const seccomp = spawnSync(guard[0]!, [...guard.slice(1), 'grep', '^Seccomp:', '/proc/self/status'], { encoding: 'utf8' });
  assert.match(seccomp.stdout, /Seccomp:\s+2/, 'the exec-ed program runs under the filter');
});

test('digZeroPages turns allocated zero pages into holes and keeps the content', async () => {
  const file = join(await scratch(), 'sparse');
  const pages = 64;
  const content = Buffer.alloc(pages * PAGE);
  for (let p = 0; p < pages; p++) if (p % 4 === 1) content.fill(p, p * PAGE, (p + 1) * PAGE);
  await writeFile(file, content);
  const sum = async (): Promise<string> => createHash('sha256').update(await readFile(file)).digest('hex');
  const before = await sum();
  const punched = await digZeroPages('perl', file);
  assert.equal(punched, (pages - pages / 4) * PAGE);
  assert.equal(await allocated(file), (pages / 4) * PAGE);
  assert.equal(await sum(), before);
  assert.equal(await digZeroPages('perl', file), 0, 'idempotent');
});
