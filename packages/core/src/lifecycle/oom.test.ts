/** An OOM kill the agent reports is logged, emitted and audited; the sandbox keeps running (fake runtime and agent). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SandboxOomEvent } from './events.js';
import { createTestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';
import { getSandbox } from './get.js';
import { runCommand } from '../sandbox/commands.js';
import { recordAgentEvent } from './oom.js';

test('a command killed for running out of memory: its result says oom, the sandbox runs on, the kill is emitted and audited', async () => {
  const w = await createTestWorld();
  const sbx = await createSandbox(w.core, {});
  const seen: SandboxOomEvent[] = [];
  w.core.events.onOom((e) => seen.push(e));
  const result = await runCommand(w.core, sbx.id, { cmd: 'oom' });
  assert.ok('exitCode' in result);
  assert.deepEqual([result.exitCode, result.signal, result.error], [null, 'SIGKILL', 'oom']);
  for (let i = 0; i < 100 && (await w.core.store.listAudit({ sandboxId: sbx.id })).every((e) => e.action !== 'sandbox.oom'); i++) await new Promise((r) => setTimeout(r, 10));
  const audit = (await w.core.store.listAudit({ sandboxId: sbx.id })).filter((e) => e.action === 'sandbox.oom');
  assert.equal(audit.length, 1);
  assert.deepEqual([audit[0]?.method, audit[0]?.status, audit[0]?.errorCode, audit[0]?.apiKeyId], ['EVENT', 0, 'COMMAND_OOM', null]);
  assert.equal(audit[0]?.path, `/v1/sandboxes/${sbx.id}/processes/${result.pid}`);
  assert.equal(seen.length, 1);
  assert.equal(seen[0]?.sandboxId, sbx.id);
  assert.equal(seen[0]?.pid, result.pid);
  assert.equal((await getSandbox(w.core, sbx.id)).state, 'running');
  await w.dispose();
});

test("an event naming another sandbox (a fork's copy of its parent's queue) is dropped", async () => {
  const w = await createTestWorld();
  const seen: SandboxOomEvent[] = [];
  w.core.events.onOom((e) => seen.push(e));
  const event = { type: 'oom' as const, sandboxId: 'sbx_parent', at: 0, pid: 5, cmd: 'x', commandPid: 5, killer: 'agent' as const, rssBytes: 1, usedBytes: 2, limitBytes: 3 };
  await recordAgentEvent(w.core, 'sbx_fork', event);
  assert.equal(seen.length, 0);
  assert.equal((await w.core.store.listAudit({})).filter((e) => e.action === 'sandbox.oom').length, 0);
  await recordAgentEvent(w.core, 'sbx_parent', event);
  assert.equal(seen.length, 1);
  await w.dispose();
});
