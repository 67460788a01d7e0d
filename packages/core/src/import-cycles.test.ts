/**
 * Core has no import circle: its compiled modules (this test's own folder, `dist/`) form a graph without
 * cycles, as madge reads it from the `import` statements left after compilation (type-only imports are
 * erased and cannot tie one). Use-cases import the shared context (`context.ts`), never the assembly
 * (`core.ts`), which imports them; a cycle reintroduced shows here with its path.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import madge from 'madge';

const DIST = fileURLToPath(new URL('.', import.meta.url));

test('the compiled core has no circular import', async () => {
  const graph = await madge(DIST, { fileExtensions: ['js'], excludeRegExp: [/\.test\.js$/] });
  const modules = Object.keys(graph.obj());
  assert.ok(modules.includes('core.js') && modules.includes('context.js') && modules.length > 50, `madge read ${modules.length} modules of ${DIST}`);
  assert.deepEqual(graph.circular().map((cycle) => cycle.join(' > ')), []);
});

test('only the composition root, the index and tests import the assembly', async () => {
  const graph = await madge(DIST, { fileExtensions: ['js'], excludeRegExp: [/\.test\.js$/] });
  const importers = graph.depends('core');
  assert.deepEqual(importers.filter((m) => m !== 'index.js' && !m.startsWith('testing/')), []);
});
