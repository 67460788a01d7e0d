/** Unit tests of cutting text for a model, and of the hints attached to errors. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RamifyError } from '@ramify/sdk';
import { cutForModel } from './cut.js';
import { toolError } from './results.js';
import { CHECKPOINT_RETRY_AFTER_MS } from './hints.js';

test('text that fits is returned as it is', () => {
  assert.deepEqual(cutForModel('short', 5, 'x'), { text: 'short', cut: false, totalBytes: 5, keptBytes: 5 });
});

test('long text keeps 40% head and 60% tail around one marker saying what was cut and where the rest is', () => {
  const r = cutForModel(`${'a'.repeat(100)}${'b'.repeat(100)}`, 50, 'see /tmp/f');
  assert.equal(r.cut, true);
  assert.equal(r.keptBytes, 50);
  assert.equal(r.text, `${'a'.repeat(20)}\n[ramify: 150 of 200 bytes cut here (bytes 20-170); see /tmp/f]\n${'b'.repeat(30)}`);
});

test('a cut never splits a UTF-8 character', () => {
  const r = cutForModel('é'.repeat(100), 11, 'w');
  assert.ok(!r.text.includes('\uFFFD'), r.text);
  assert.match(r.text, /^é{2}\n\[ramify: \d+ of 200 bytes cut here/);
  assert.ok(r.text.endsWith('é'.repeat(3)) || r.text.endsWith('é'.repeat(4)));
});

test('CHECKPOINT_BLOCKED: retry after N ms, with the endpoints that blocked it', () => {
  const r = toolError(new RamifyError('CHECKPOINT_BLOCKED', 'blocked', { id: 'sbx_1', endpoints: ['10.0.0.2:443'] }));
  assert.equal(r.isError, true);
  const error = (r.structuredContent as { error: { code: string; retryAfterMs: number; hint: string } }).error;
  assert.equal(error.code, 'CHECKPOINT_BLOCKED');
  assert.equal(error.retryAfterMs, CHECKPOINT_RETRY_AFTER_MS);
  assert.match(error.hint, /10\.0\.0\.2:443/);
  assert.match((r.content[0] as { text: string }).text, new RegExp(`retry after ${CHECKPOINT_RETRY_AFTER_MS} ms\\)$`));
});

test('a paused sandbox says resume; anything thrown that is not Ramify\'s is INTERNAL, never a crash', () => {
  const paused = toolError(new RamifyError('INVALID_STATE', 'paused', { state: 'paused' }));
  assert.match((paused.structuredContent as { error: { hint: string } }).error.hint, /sandbox_resume/);
  const bug = toolError(new TypeError('x is undefined'));
  assert.equal((bug.structuredContent as { error: { code: string } }).error.code, 'INTERNAL');
});
