/**
 * Use-case tests of foreground results with the FAKE runtime and agent (core logic only: the capture
 * limit comes from core's options and the result says what it cut; the real agent and runtime are
 * covered by the conformance suite and the real-daemon tests).
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_MAX_OUTPUT_BYTES, type CommandResult } from '@ramify/contracts';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from '../lifecycle/create.js';
import { runCommand } from './commands.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});

async function foreground(cmd: string): Promise<CommandResult> {
  const sbx = await createSandbox(w.core, {});
  const r = await runCommand(w.core, sbx.id, { cmd });
  assert.ok('stdout' in r, 'a foreground result');
  return r;
}

describe('runCommand (fake agent): the capture limit', () => {
  test('a small output is whole and says so, under the default limit', async () => {
    const r = await foreground('echo hi');
    assert.equal(r.stdout, 'hi\n');
    assert.equal(r.truncated, false);
    assert.deepEqual(r.capture, { limitBytes: DEFAULT_MAX_OUTPUT_BYTES, stdout: { keptBytes: 3, totalBytes: 3 }, stderr: { keptBytes: 0, totalBytes: 0 } });
  });

  test('past core.options.maxOutputBytes the result holds the head and the counts', async () => {
    w.core.options.maxOutputBytes = 5;
    const r = await foreground('echo héllo wörld');
    assert.equal(r.exitCode, 0);
    // h, é (2 bytes), l, l: 5 bytes.
    assert.equal(r.stdout, 'héll');
    assert.equal(r.truncated, true);
    assert.deepEqual(r.capture, { limitBytes: 5, stdout: { keptBytes: 5, totalBytes: Buffer.byteLength('héllo wörld\n') }, stderr: { keptBytes: 0, totalBytes: 0 } });
  });

  test('a cut inside a character leaves it out whole', async () => {
    w.core.options.maxOutputBytes = 2;
    const r = await foreground('echo héllo');
    assert.equal(r.stdout, 'h');
    assert.equal(r.capture.stdout.keptBytes, 1);
    assert.equal(r.truncated, true);
  });
});
