/** ForegroundWork: busy while a foreground run or a lifecycle lock is in flight, quiet after. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForegroundWork } from './foreground.js';
import { KeyedLock } from './locks.js';

test('quietForMs is 0 while a run or a lock is in flight, then counts from the last one to end', async () => {
  const locks = new KeyedLock('host-test');
  const foreground = new ForegroundWork(locks);
  assert.equal(foreground.quietForMs(), Infinity);
  let finish!: () => void;
  const running = foreground.run(() => new Promise<void>((resolve) => (finish = resolve)));
  assert.equal(foreground.quietForMs(), 0);
  finish();
  await running;
  assert.ok(foreground.quietForMs() >= 0 && foreground.quietForMs() < Infinity);
  let unlock: (() => void) | undefined;
  const locked = locks.run('sbx_a', () => new Promise<void>((resolve) => (unlock = resolve)));
  assert.equal(foreground.quietForMs(), 0);
  while (unlock === undefined) await new Promise((r) => setImmediate(r));
  unlock();
  await locked;
  await assert.rejects(foreground.run(async () => { throw new Error('failed'); }), /failed/);
  assert.notEqual(foreground.quietForMs(), 0);
});
