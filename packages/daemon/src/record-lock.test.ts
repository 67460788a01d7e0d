/**
 * The shared lock-with-a-record (record-lock.ts) on real files and the kernel's real OFD locks: a second
 * taker gets null and reads the holder's record; `isLockHeld` sees the lock without taking it; a file that
 * is not a record (empty, not JSON, an array, refused by `parse`) reads as null; released, the lock is free.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isLockHeld, lockWithRecord, readLockRecord } from './record-lock.js';

const pidOf = (fields: Record<string, unknown>): { pid: number } | null => (typeof fields.pid === 'number' ? { pid: fields.pid } : null);

test('one holder: a second taker gets null and reads its record; written records replace the old; released, free', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ramify-record-lock-'));
  const path = join(dir, 'x.lock');
  try {
    assert.equal(isLockHeld(path), false, 'no file: not held');
    const lock = lockWithRecord<{ pid: number; note?: string }>(path, { pid: 7, note: 'a much longer first record than the next one' });
    assert.ok(lock);
    assert.equal(isLockHeld(path), true);
    assert.equal(lockWithRecord(path, { pid: 8 }), null, 'a second open is refused, even in this process');
    assert.deepEqual(readLockRecord(path, pidOf), { pid: 7 });
    lock.write({ pid: 9 });
    assert.equal(await readFile(path, 'utf8'), '{"pid":9}\n', 'cut to length');
    lock.release();
    lock.release();
    lock.write({ pid: 10 });
    assert.equal(await readFile(path, 'utf8'), '{"pid":9}\n', 'released: no more writes');
    assert.equal(isLockHeld(path), false);
    const again = lockWithRecord(path, { pid: 11 });
    assert.ok(again);
    again.release();

    for (const content of ['', '{"pid":', '[1]', '"x"', '{"pid":"7"}']) {
      writeFileSync(path, content);
      assert.equal(readLockRecord(path, pidOf), null, JSON.stringify(content));
    }
    assert.equal(readLockRecord(join(dir, 'missing.lock'), pidOf), null);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
