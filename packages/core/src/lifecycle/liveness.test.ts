/** The liveness monitor: a sandbox whose runtime instance exited is failed at once, calls waiting on it too (fake runtime). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';
import { getSandbox } from './get.js';
import { LivenessMonitor } from './liveness.js';
import { runCommand } from '../sandbox/commands.js';

test('an exited instance: a call already waiting on its agent and every later call fail with SANDBOX_FAILED; the sandbox is error', async () => {
  // A connect bound far above the test runner's patience: the waiting call can only end through the monitor.
  const w = await createTestWorld({ agentConnectTimeoutMs: 600_000, livenessPollMs: 0 });
  const monitor = new LivenessMonitor(w.core);
  const lost: Array<{ sandboxId: string; reason: string; noticedBy: string }> = [];
  w.core.events.onInstanceLost(({ sandboxId, reason, noticedBy }) => lost.push({ sandboxId, reason, noticedBy }));
  const sbx = await createSandbox(w.core, {});
  const other = await createSandbox(w.core, {});
  w.runtime.die(sbx.id, 'exited');
  // The channel dropped with the instance; this call reconnects, and every attempt is closed at once.
  const waiting = runCommand(w.core, sbx.id, { cmd: 'true' });
  const outcome = waiting.then(() => 'resolved', (err: { code?: string }) => err.code);
  await monitor.sweep();
  assert.equal(await outcome, 'SANDBOX_FAILED');
  const after = await getSandbox(w.core, sbx.id);
  assert.equal(after.state, 'error');
  assert.match(after.error ?? '', /stopped unexpectedly \(exited\)/);
  assert.deepEqual(lost, [{ sandboxId: sbx.id, reason: 'exited', noticedBy: 'liveness' }]);
  await assert.rejects(runCommand(w.core, sbx.id, { cmd: 'true' }), (err: { code?: string; message: string }) => err.code === 'SANDBOX_FAILED' && /stopped unexpectedly/.test(err.message));
  assert.equal((await getSandbox(w.core, other.id)).state, 'running', 'a live sandbox is left alone');
  assert.equal((await runCommand(w.core, other.id, { cmd: 'true' }) as { exitCode: number }).exitCode, 0);
  await monitor.stop();
  await w.dispose();
});
