/**
 * Use-case tests of create/pause/resume/kill/exec with FAKE runtime, network and agent (core logic only;
 * the real runtime is covered by its own conformance suite) and a real SQLite store.
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_MAX_OUTPUT_BYTES, RamifyError } from '@ramify/contracts';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from './create.js';
import { getSandbox } from './get.js';
import { killSandbox } from './kill.js';
import { listSandboxes, parseListQuery } from './list.js';
import { pauseSandbox } from './pause.js';
import { resumeSandbox } from './resume.js';
import { setSandboxTimeout } from './set-timeout.js';
import { readFile, writeFile } from '../sandbox/files.js';
import { runCommand } from '../sandbox/commands.js';
import { FakeRuntime } from '../testing/fake-ports.js';
import { createCore } from '../core.js';
import { silentLogger } from '../ports/logger.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});

async function* bytes(text: string): AsyncIterable<Uint8Array> {
  yield new TextEncoder().encode(text);
}
async function text(stream: AsyncIterable<Uint8Array>): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const c of stream) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

describe('create (fake runtime)', () => {
  test('from a template: slot → network → restore → agent → identity → running with its deadline', async () => {
    const sbx = await createSandbox(w.core, { envs: { FOO: 'bar' }, metadata: { team: 'x' }, timeoutMs: 60_000 });
    assert.equal(sbx.state, 'running');
    assert.match(sbx.id, /^sbx_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(sbx.slot, 1);
    assert.equal(sbx.templateId, 'tpl_base');
    assert.equal(sbx.sourceSnapshotId, 'snap_tpl');
    assert.equal(sbx.endAt, w.clock.now() + 60_000);
    assert.equal(sbx.operation, null);
    assert.equal(w.network.attached.get(1), sbx.id);
    const [identity] = w.runtime.guest(sbx.id).identities;
    assert.equal(identity.sandboxId, sbx.id);
    assert.equal(identity.hostname, sbx.id.toLowerCase().replace('_', '-'));
    assert.deepEqual(identity.envs, { FOO: 'bar' });
    assert.equal(identity.clockMs, w.clock.now());
    assert.equal(identity.entropyHex.length, 64);
    assert.deepEqual((await getSandbox(w.core, sbx.id)).metadata, { team: 'x' });
  });

  test('unknown template is TEMPLATE_NOT_FOUND and leaves no record', async () => {
    await assert.rejects(createSandbox(w.core, { template: 'nope' }), { code: 'TEMPLATE_NOT_FOUND' });
    assert.equal((await listSandboxes(w.core, {})).sandboxes.length, 0);
  });

  test('template and snapshot together are VALIDATION_FAILED', async () => {
    await assert.rejects(createSandbox(w.core, { template: 'base', snapshot: 'x' }), { code: 'VALIDATION_FAILED' });
  });

  test('no runtime wired is RUNTIME_UNAVAILABLE', async () => {
    const core = createCore({ ...w.core, runtimes: [], logger: silentLogger });
    await assert.rejects(createSandbox(core, {}), { code: 'RUNTIME_UNAVAILABLE' });
  });

  test('a failed restore ends in error with the reason, slot and network released', async () => {
    w.runtime.failAllRestores = true;
    await assert.rejects(createSandbox(w.core, {}), (err: Error & { code?: string }) => err.code === 'RUNTIME_ERROR' && /fake restore/.test(err.message));
    const [failed] = (await listSandboxes(w.core, { states: ['error'] })).sandboxes;
    assert.match(failed.error ?? '', /create failed/);
    assert.deepEqual(await w.store.listSlots('host-test'), []);
    assert.equal(w.network.attached.size, 0);
  });

  test('a restore refused as bad input (VALIDATION_FAILED) leaves no sandbox behind: killed, reason kept', async () => {
    w.runtime.refuseAllRestores = true;
    try {
      await assert.rejects(createSandbox(w.core, { memoryMB: 4096 }), { code: 'VALIDATION_FAILED' });
    } finally {
      w.runtime.refuseAllRestores = false;
    }
    assert.equal((await listSandboxes(w.core, { states: ['error', 'creating', 'running'] })).sandboxes.length, 0);
    const [refused] = (await listSandboxes(w.core, { states: ['killed'] })).sandboxes;
    assert.match(refused?.error ?? '', /create refused: .*fake: memoryMB 4096 is more than the image allows/);
    assert.deepEqual(await w.store.listSlots('host-test'), []);
    assert.equal(w.network.attached.size, 0);
  });
});

describe('pause and resume (fake runtime)', () => {
  test('pause checkpoints into a pause snapshot, keeps the slot, stops the clock; exec then says resume', async () => {
    const sbx = await createSandbox(w.core, {});
    await writeFile(w.core, sbx.id, '/root/state.txt', bytes('before pause'));
    const paused = await pauseSandbox(w.core, sbx.id);
    assert.equal(paused.state, 'paused');
    assert.equal(paused.endAt, null);
    assert.equal(paused.slot, sbx.slot);
    assert.equal(paused.operation, null);
    const snap = await w.store.getSnapshot(paused.pausedSnapshotId ?? '');
    assert.equal(snap?.kind, 'pause');
    assert.equal(snap?.status, 'ready');
    assert.ok((snap?.sizeBytes ?? 0) > 0);
    assert.equal(w.runtime.instances.has(sbx.id), false);
    assert.equal(w.network.attached.get(sbx.slot ?? 0), sbx.id, 'network stays allocated while paused');
    await assert.rejects(runCommand(w.core, sbx.id, { cmd: 'echo hi' }), (e: Error & { code?: string }) => e.code === 'INVALID_STATE' && /resume/.test(e.message));
    assert.equal((await pauseSandbox(w.core, sbx.id)).state, 'paused', 'pausing a paused sandbox is a no-op');
  });

  test('resume restores memory and files into the same id and slot with a fresh identity; the pause image is collected', async () => {
    const sbx = await createSandbox(w.core, { timeoutMs: 10_000 });
    await writeFile(w.core, sbx.id, '/root/state.txt', bytes('kept'));
    const paused = await pauseSandbox(w.core, sbx.id);
    w.clock.advance(5_000);
    const resumed = await resumeSandbox(w.core, sbx.id, { timeoutMs: 20_000 });
    assert.equal(resumed.state, 'running');
    assert.equal(resumed.slot, sbx.slot);
    assert.equal(resumed.pausedSnapshotId, null);
    assert.equal(resumed.timeoutMs, 20_000);
    assert.equal(resumed.endAt, w.clock.now() + 20_000);
    assert.equal(await text(await readFile(w.core, sbx.id, '/root/state.txt')), 'kept');
    const ids = w.runtime.guest(sbx.id).identities;
    assert.equal(ids.length, 2);
    assert.notEqual(ids[0].entropyHex, ids[1].entropyHex);
    assert.equal(ids[1].clockMs, w.clock.now());
    // The resume collects its pause image once it answered, queued on the sandbox's lock: wait for that.
    await w.core.locks.run(sbx.id, async () => undefined);
    assert.equal(await w.store.getSnapshot(paused.pausedSnapshotId ?? ''), null);
    assert.deepEqual(await w.storage.list(), ['snap_tpl']);
  });

  test('open TCP endpoints block the pause with CHECKPOINT_BLOCKED; the sandbox keeps running and its agent works', async () => {
    const sbx = await createSandbox(w.core, {});
    w.runtime.guest(sbx.id).endpoints.push('10.0.0.2:41234 -> 93.184.216.34:443 ESTABLISHED');
    await assert.rejects(
      pauseSandbox(w.core, sbx.id),
      (e: Error & { code?: string; status?: number }) => e.code === 'CHECKPOINT_BLOCKED' && e.status === 409 && e.message.includes('93.184.216.34:443'),
    );
    const after = await getSandbox(w.core, sbx.id);
    assert.equal(after.state, 'running');
    assert.equal(after.operation, null);
    assert.ok(!w.runtime.calls.includes(`checkpoint ${sbx.id}`), 'checkpoint was never attempted');
    assert.equal(w.runtime.instances.has(sbx.id), true);
    assert.deepEqual((await w.store.listSnapshots()).map((s) => s.id), ['snap_tpl']);
    const r = await runCommand(w.core, sbx.id, { cmd: 'echo still here' });
    assert.equal('stdout' in r ? r.stdout : '', 'still here\n');
  });

  test('while a pause waits for a connection to close, the sandbox stays running and its commands run', async () => {
    const sbx = await createSandbox(w.core, {});
    const guest = w.runtime.guest(sbx.id);
    guest.endpoints.push('10.0.0.2:1 -> 1.1.1.1:443 ESTABLISHED');
    const sleep = w.clock.sleep.bind(w.clock);
    const during: string[] = [];
    w.clock.sleep = async (ms) => {
      w.clock.sleep = sleep; // once: the command below sleeps on the clock too
      during.push((await getSandbox(w.core, sbx.id)).state);
      const r = await runCommand(w.core, sbx.id, { cmd: 'echo meanwhile' });
      during.push('stdout' in r ? r.stdout : '');
      guest.endpoints.length = 0;
      await sleep(ms);
    };
    assert.equal((await pauseSandbox(w.core, sbx.id)).state, 'paused');
    w.clock.sleep = sleep;
    assert.deepEqual(during, ['running', 'meanwhile\n']);
  });

  test('endpoints that drain within the bound let the pause go through', async () => {
    const sbx = await createSandbox(w.core, {});
    const guest = w.runtime.guest(sbx.id);
    guest.endpoints.push('10.0.0.2:1 -> 1.1.1.1:443 TIME_WAIT');
    const sleep = w.clock.sleep.bind(w.clock);
    w.clock.sleep = async (ms) => {
      guest.endpoints.length = 0;
      await sleep(ms);
    };
    assert.equal((await pauseSandbox(w.core, sbx.id)).state, 'paused');
  });

  test('an agent from before quiesceNetwork (an older image) is asked for its endpoints instead', async () => {
    const sbx = await createSandbox(w.core, {});
    const guest = w.runtime.guest(sbx.id);
    guest.withoutQuiesce = true;
    guest.endpoints.push('10.0.0.2:1 -> 1.1.1.1:443 ESTABLISHED');
    await assert.rejects(pauseSandbox(w.core, sbx.id), (err: unknown) => err instanceof RamifyError && err.code === 'CHECKPOINT_BLOCKED' && /1\.1\.1\.1:443/.test(err.message));
    guest.endpoints.length = 0;
    assert.equal((await pauseSandbox(w.core, sbx.id)).state, 'paused');
  });

  test('a runtime that does not need a quiet network is not asked about endpoints', async () => {
    await w.dispose();
    w = await createTestWorld();
    const relaxed = new FakeRuntime({ checkpointNeedsQuietNetwork: false });
    relaxed.enforceQuietNetwork = false;
    const core = createCore({ ...w.core, runtimes: [relaxed], connectAgent: relaxed.connectAgent, logger: silentLogger });
    const sbx = await createSandbox(core, {});
    relaxed.guest(sbx.id).endpoints.push('10.0.0.2:1 -> 1.1.1.1:443 ESTABLISHED');
    assert.equal((await pauseSandbox(core, sbx.id)).state, 'paused');
    await core.sessions.closeAll();
  });

  test('a failed checkpoint that leaves the instance up rolls back to running with the agent reopened', async () => {
    const sbx = await createSandbox(w.core, {});
    w.runtime.nextCheckpoint = 'fail-keeps-running';
    await assert.rejects(pauseSandbox(w.core, sbx.id), { code: 'RUNTIME_ERROR' });
    assert.equal((await getSandbox(w.core, sbx.id)).state, 'running');
    const r = await runCommand(w.core, sbx.id, { cmd: 'echo ok' });
    assert.equal('exitCode' in r ? r.exitCode : -1, 0);
  });

  test('a failed checkpoint that killed the instance restores it from the image it was started from, and says so', async () => {
    const sbx = await createSandbox(w.core, {});
    w.runtime.nextCheckpoint = 'fail-kills';
    await assert.rejects(pauseSandbox(w.core, sbx.id), (err: { code?: string; message: string }) =>
      err.code === 'RUNTIME_ERROR' && /restored from the image it was last started from \(snapshot 'snap_tpl'\)/.test(err.message) && /lost/.test(err.message));
    const after = await getSandbox(w.core, sbx.id);
    assert.equal(after.state, 'running');
    assert.equal((await runCommand(w.core, sbx.id, { cmd: 'true' }) as { exitCode: number }).exitCode, 0, 'its agent answers');
  });

  test('a failed checkpoint that killed the instance, whose restore fails too, ends in error with both reasons', async () => {
    const sbx = await createSandbox(w.core, {});
    w.runtime.nextCheckpoint = 'fail-kills';
    w.runtime.failRestoreOf.add(sbx.id);
    await assert.rejects(pauseSandbox(w.core, sbx.id), { code: 'RUNTIME_ERROR' });
    const after = await getSandbox(w.core, sbx.id);
    assert.equal(after.state, 'error');
    assert.match(after.error ?? '', /checkpoint failed.*restoring it from snapshot 'snap_tpl' failed too/);
  });

  test('a failed resume leaves the sandbox paused and resumable', async () => {
    const sbx = await createSandbox(w.core, {});
    await pauseSandbox(w.core, sbx.id);
    w.runtime.failRestoreOf.add(sbx.id);
    await assert.rejects(resumeSandbox(w.core, sbx.id), { code: 'RUNTIME_ERROR' });
    const after = await getSandbox(w.core, sbx.id);
    assert.equal(after.state, 'paused');
    assert.match(after.error ?? '', /resume failed/);
    assert.equal((await resumeSandbox(w.core, sbx.id)).state, 'running');
  });
});

describe('kill, locks, exec, timeouts, list (fake runtime)', () => {
  test('kill releases everything, collects the pause image, and is idempotent', async () => {
    const sbx = await createSandbox(w.core, {});
    const paused = await pauseSandbox(w.core, sbx.id);
    const killed = await killSandbox(w.core, sbx.id);
    assert.equal(killed.state, 'killed');
    assert.equal(killed.slot, null);
    assert.deepEqual(await w.store.listSlots('host-test'), []);
    assert.equal(w.network.attached.size, 0);
    assert.equal(await w.store.getSnapshot(paused.pausedSnapshotId ?? ''), null);
    assert.equal((await killSandbox(w.core, sbx.id)).state, 'killed');
    await assert.rejects(runCommand(w.core, sbx.id, { cmd: 'echo x' }), { code: 'SANDBOX_NOT_FOUND' });
    await assert.rejects(killSandbox(w.core, 'sbx_unknown'), { code: 'SANDBOX_NOT_FOUND' });
  });

  test('concurrent calls on one sandbox serialise: pause, pause, kill end killed without errors', async () => {
    const sbx = await createSandbox(w.core, {});
    const results = await Promise.allSettled([pauseSandbox(w.core, sbx.id), pauseSandbox(w.core, sbx.id), killSandbox(w.core, sbx.id)]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled']);
    assert.equal((await getSandbox(w.core, sbx.id)).state, 'killed');
    assert.equal(w.runtime.calls.filter((c) => c === `checkpoint ${sbx.id}`).length, 1);
  });

  test('exec: foreground result, non-zero exit, background pid; agent channel loss reconnects', async () => {
    const sbx = await createSandbox(w.core, {});
    assert.deepEqual(await runCommand(w.core, sbx.id, { cmd: 'echo hello world' }), {
      pid: 100, exitCode: 0, signal: null, stdout: 'hello world\n', stderr: '', error: null, truncated: false,
      capture: { limitBytes: DEFAULT_MAX_OUTPUT_BYTES, stdout: { keptBytes: 12, totalBytes: 12 }, stderr: { keptBytes: 0, totalBytes: 0 } },
    });
    const failed = await runCommand(w.core, sbx.id, { cmd: 'fail 3' });
    assert.equal('exitCode' in failed ? failed.exitCode : 0, 3);
    const bg = await runCommand(w.core, sbx.id, { cmd: 'sleep', background: true });
    assert.deepEqual(Object.keys(bg), ['pid']);
    w.core.sessions.peek(sbx.id);
    const live = w.runtime.instances.get(sbx.id)?.sessions.at(-1);
    live?.shutdown('channel dropped');
    const again = await runCommand(w.core, sbx.id, { cmd: 'echo back' });
    assert.equal('stdout' in again ? again.stdout : '', 'back\n');
  });

  test('setTimeout moves a running deadline and only the lifetime of a paused one', async () => {
    const sbx = await createSandbox(w.core, {});
    assert.equal((await setSandboxTimeout(w.core, sbx.id, 1_000)).endAt, w.clock.now() + 1_000);
    await pauseSandbox(w.core, sbx.id);
    const paused = await setSandboxTimeout(w.core, sbx.id, 7_000);
    assert.equal(paused.endAt, null);
    assert.equal(paused.timeoutMs, 7_000);
  });

  test('list filters by state and metadata and paginates', async () => {
    const a = await createSandbox(w.core, { metadata: { team: 'red' } });
    const b = await createSandbox(w.core, { metadata: { team: 'blue' } });
    const c = await createSandbox(w.core, { metadata: { team: 'red' } });
    await pauseSandbox(w.core, c.id);
    await killSandbox(w.core, b.id);
    assert.deepEqual((await listSandboxes(w.core, {})).sandboxes.map((s) => s.id), [a.id, c.id]);
    assert.deepEqual((await listSandboxes(w.core, parseListQuery({ state: 'paused' }))).sandboxes.map((s) => s.id), [c.id]);
    assert.deepEqual((await listSandboxes(w.core, parseListQuery({ metadata: 'team=red' }))).sandboxes.map((s) => s.id), [a.id, c.id]);
    assert.deepEqual((await listSandboxes(w.core, parseListQuery({ state: 'killed,running' }))).sandboxes.map((s) => s.id), [a.id, b.id]);
    const first = await listSandboxes(w.core, { limit: 1 });
    assert.deepEqual(first.sandboxes.map((s) => s.id), [a.id]);
    const second = await listSandboxes(w.core, { limit: 1, nextToken: first.nextToken ?? '' });
    assert.deepEqual(second.sandboxes.map((s) => s.id), [c.id]);
    assert.equal(second.nextToken, null);
    assert.throws(() => parseListQuery({ state: 'running,sleeping' }), (e: Error & { code?: string }) => e.code === 'VALIDATION_FAILED' && /sleeping/.test(e.message));
    assert.equal(first.sandboxes[0].createdAt, new Date(w.clock.now()).toISOString());
  });
});
