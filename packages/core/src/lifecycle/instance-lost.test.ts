/** A sandbox whose instance dies on its own ends in `error` with a reason (fake runtime). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';
import { getSandbox } from './get.js';
import { runCommand } from '../sandbox/commands.js';
import type { SandboxAgentLostEvent, SandboxInstanceLostEvent } from './events.js';

async function eventually(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200 && !(await check()); i++) await new Promise((r) => setTimeout(r, 10));
}

test('an instance killed by the OOM killer: the sandbox becomes error, says out of memory, releases its slot', async () => {
  const w = await createTestWorld({ agentConnectTimeoutMs: 200 });
  const agentLost: SandboxAgentLostEvent[] = [];
  const instanceLost: SandboxInstanceLostEvent[] = [];
  w.core.events.onAgentLost((e) => agentLost.push(e));
  w.core.events.onInstanceLost((e) => instanceLost.push(e));
  const sbx = await createSandbox(w.core, { memoryMB: 256 });
  w.runtime.die(sbx.id, 'oom');
  await eventually(async () => (await getSandbox(w.core, sbx.id)).state === 'error');
  const after = await getSandbox(w.core, sbx.id);
  assert.equal(after.state, 'error');
  assert.match(after.error ?? '', /ran out of memory \(limit 256 MB\)/);
  assert.equal(after.slot, null);
  // The agent sessions reported the lost channel on the bus; the lifecycle confirmed and announced the loss.
  assert.deepEqual(agentLost.map((e) => e.sandboxId), [sbx.id]);
  assert.equal(instanceLost.length, 1);
  assert.deepEqual({ ...instanceLost[0]!, at: 0, sandbox: instanceLost[0]!.sandbox.state }, { sandboxId: sbx.id, sandbox: 'error', reason: 'oom', noticedBy: 'agent-channel', at: 0 });
  await assert.rejects(runCommand(w.core, sbx.id, { cmd: 'true' }), (err: { code?: string }) => err.code === 'SANDBOX_FAILED');
  await w.dispose();
});
