/**
 * The TEMPLATE cell of `ramify snapshot list` and `sandbox list`: a template's name, a template image
 * named by the template listing it (also when its row names an older id), `older build of NAME` for an
 * image a rebuild replaced, `(deleted)` only when the template is gone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { labelsOf } from './template-labels.js';

const templates = [
  { id: 'tpl_a', name: 'py', images: [{ runtime: 'gvisor' as const, snapshotId: 'snap_tpl_new' }, { runtime: 'microvm' as const, snapshotId: 'snap_tpl_vm' }] },
];
const label = labelsOf(templates);

test('a sandbox or a pause, fork or named snapshot: its template\'s name', () => {
  assert.equal(label('tpl_a'), 'py');
});

test("a template image: the name of the template listing it, whatever id the image's row names", () => {
  assert.equal(label('tpl_a', 'snap_tpl_new'), 'py');
  assert.equal(label('tpl_phantom', 'snap_tpl_vm'), 'py', 'an image recorded under an id its template never kept (a second runtime of a first build, a rebuild after a delete)');
});

test('an image a rebuild replaced, kept while a sandbox made from it lives: an older build of the template', () => {
  assert.equal(label('tpl_a', 'snap_tpl_old'), 'older build of py');
});

test('a template no longer listed: its id, deleted', () => {
  assert.equal(label('tpl_gone'), 'tpl_gone (deleted)');
  assert.equal(label('tpl_gone', 'snap_tpl_gone'), 'tpl_gone (deleted)');
});
