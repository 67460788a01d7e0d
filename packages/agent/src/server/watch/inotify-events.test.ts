import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inotifywaitArgs, parseRecord, RecordSplitter } from './inotify-events.js';

test('maps inotify flags to E2B event types, a rename as its old name then a create', () => {
  const types = (flags: string, path: string) => parseRecord('/w', flags, path).events.map((e) => `${e.type} ${e.name}${e.isDir ? '/' : ''}`);
  assert.deepEqual(types('CREATE', '/w/a'), ['create a']);
  assert.deepEqual(types('MODIFY', '/w/a'), ['write a']);
  assert.deepEqual(types('ATTRIB', '/w/a'), ['chmod a']);
  assert.deepEqual(types('MOVED_FROM', '/w/a'), ['rename a']);
  assert.deepEqual(types('MOVED_TO', '/w/sub/b'), ['create sub/b']);
  assert.deepEqual(types('DELETE', '/w/b'), ['remove b']);
  assert.deepEqual(types('CREATE,ISDIR', '/w/d'), ['create d/']);
  // A subdirectory's own DELETE_SELF repeats its parent's DELETE: dropped.
  assert.deepEqual(types('DELETE_SELF', '/w/d/'), []);
});

test('the watched directory deleted or moved ends the watch; a queue overflow is flagged', () => {
  const gone = parseRecord('/w', 'DELETE_SELF', '/w/');
  assert.equal(gone.rootGone, true);
  assert.deepEqual(gone.events, [{ type: 'remove', name: '', path: '/w', isDir: true }]);
  assert.equal(parseRecord('/w', 'MOVE_SELF', '/w/').rootGone, true);
  assert.equal(parseRecord('/w', 'Q_OVERFLOW', '').overflow, true);
});

test('splits NUL-separated records across chunks, names with newlines included', () => {
  const splitter = new RecordSplitter();
  assert.deepEqual(splitter.push(Buffer.from('CREATE\0/w/a\nb\0MOD')), [['CREATE', '/w/a\nb']]);
  assert.deepEqual(splitter.push(Buffer.from('IFY\0/w/c')), []);
  assert.deepEqual(splitter.push(Buffer.from('\0')), [['MODIFY', '/w/c']]);
});

test('runs inotifywait recursively only when asked, the path after --', () => {
  assert.deepEqual(inotifywaitArgs('/w', false).slice(-2), ['--', '/w']);
  assert.ok(inotifywaitArgs('/w', true).includes('-r'));
  assert.ok(!inotifywaitArgs('/w', false).includes('-r'));
});
