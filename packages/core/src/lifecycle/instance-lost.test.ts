/** A sandbox whose instance dies on its own ends in `error` with a reason (fake runtime). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';
import { getSandbox } from './get.js';
import { runCommand } from '../sandbox/commands.js';

async function eventually(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 10));
}

test('an instance killed by the OOM killer: the sandbox becomes error, says out of memory, releases its slot', async () => {
  const w = await createTestWorld({ agentConnectTimeoutMs: 200 });
  const sbx = await createSandbox(w.core, { memoryMB: 256 });
  w.runtime.die(sbx.id, 'oom');
  await eventually(async () => (await getSandbox(w.core, sbx.id)).state === 'error');
  const after = await getSandbox(w.core, sbx.id);
  assert.equal(after.state, 'error');
  assert.match(after.error ?? '', /ran out of memory \(limit 256 MB\)/);
  assert.equal(after.slot, null);
  await assert.rejects(runCommand(w.core, sbx.id, { cmd: 'true' }), (err: { code?: string }) => err.code === 'SANDBOX_FAILED');
  await w.dispose();
});
