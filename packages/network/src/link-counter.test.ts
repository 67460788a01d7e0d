/**
 * `readLinkCounter` (namespace-network.ts), the reader of a slot link's byte counters: a sysfs counter
 * read whole (the loopback's, present on every Linux host, no root needed), a missing file and a file
 * that is no number both null. Real files, no namespaces.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readLinkCounter } from './namespace-network.js';

test('a link counter is read whole; missing or not a number is null', async () => {
  const file = '/sys/class/net/lo/statistics/rx_bytes';
  const read = await readLinkCounter(file);
  assert.equal(typeof read, 'number');
  assert.ok((read as number) <= Number(await readFile(file, 'utf8')), 'a counter only grows');
  assert.equal(await readLinkCounter('/sys/class/net/lo/statistics/no_such_counter'), null);
  const dir = await mkdtemp(join(tmpdir(), 'ramify-link-counter-'));
  try {
    await writeFile(join(dir, 'rx_bytes'), 'abc\n');
    assert.equal(await readLinkCounter(join(dir, 'rx_bytes')), null);
    await writeFile(join(dir, 'tx_bytes'), '12345678901\n');
    assert.equal(await readLinkCounter(join(dir, 'tx_bytes')), 12_345_678_901);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
