import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conflictName, decide, sideChange, type ResolvedSide, type SyncedEntry } from './reconcile.js';
import type { TreeEntry } from './tree.js';

const file = (size: number, mtime = '1', mode = 0o644): TreeEntry => ({ kind: 'file', size, mtime, mode });
const base: SyncedEntry = { kind: 'file', mode: 0o644, hash: 'h0', local: { size: 3, mtime: '1' }, remote: { size: 3, mtime: '9' } };
const side = (change: ResolvedSide['change'], entry?: TreeEntry, hash?: string): ResolvedSide => (hash === undefined ? { change, entry } : { change, entry, hash });

test('each side against the base: a moved stat is a maybe, another mode or kind a change', () => {
  assert.equal(sideChange(file(3, '1'), base, 'local'), 'none');
  assert.equal(sideChange(file(3, '9'), base, 'remote'), 'none');
  assert.equal(sideChange(file(3, '2'), base, 'local'), 'maybe');
  assert.equal(sideChange(file(3, '1', 0o755), base, 'local'), 'changed');
  assert.equal(sideChange({ kind: 'dir', size: 0, mtime: '1', mode: 0o644 }, base, 'local'), 'changed');
  assert.equal(sideChange(undefined, base, 'local'), 'deleted');
  assert.equal(sideChange(file(1), undefined, 'local'), 'created');
  assert.equal(sideChange(undefined, undefined, 'local'), 'none');
});

test('one side changed is carried over; a change beats a deletion; both deleted is forgotten', () => {
  assert.equal(decide(side('changed', file(4), 'h1'), side('none', file(3))), 'push');
  assert.equal(decide(side('none', file(3)), side('changed', file(4))), 'pull');
  assert.equal(decide(side('deleted'), side('none', file(3))), 'deleteRemote');
  assert.equal(decide(side('none', file(3)), side('deleted')), 'deleteLocal');
  assert.equal(decide(side('deleted'), side('changed', file(4))), 'pull');
  assert.equal(decide(side('changed', file(4)), side('deleted')), 'push');
  assert.equal(decide(side('deleted'), side('deleted')), 'forget');
});

test('both changed: the same bytes are no conflict, different ones are; two directories merge', () => {
  assert.equal(decide(side('created', file(4), 'h1'), side('created', file(4), 'h1')), 'record');
  assert.equal(decide(side('changed', file(4), 'h1'), side('changed', file(4), 'h2')), 'conflict');
  assert.equal(decide(side('created', file(4)), side('created', file(5))), 'conflict');
  const dir = (mode: number): TreeEntry => ({ kind: 'dir', size: 0, mtime: '1', mode });
  assert.equal(decide(side('created', dir(0o755), ''), side('created', dir(0o700), '')), 'push');
});

test('the sandbox copy of a conflict is NAME.conflict, then NAME.conflict.2, ...', () => {
  assert.equal(conflictName('a.txt', () => false), 'a.txt.conflict');
  const taken = new Set(['a.txt.conflict', 'a.txt.conflict.2']);
  assert.equal(conflictName('a.txt', (c) => taken.has(c)), 'a.txt.conflict.3');
});
