/**
 * Conformance cases: the bounded per-sandbox logs (egress, ingress, commands) and ingress wakes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CommandLogRecord, EgressLogRecord, IngressLogRecord } from '@ramify/core';
import { sandbox, withStore, type StoreHarness } from './harness.js';

/** Entry `i` of `sandboxId`: a denied TCP connection to 192.0.2.1 on port 1000+i, at 1000+i ms. */
const egress = (sandboxId: string, i: number, overrides: Partial<EgressLogRecord> = {}): EgressLogRecord => ({
  sandboxId, at: 1_000 + i, protocol: 'tcp', destination: '192.0.2.1', port: 1_000 + i, name: null, verdict: 'denied', rule: null, ...overrides,
});
const ingress = (sandboxId: string, i: number): IngressLogRecord => ({
  sandboxId, at: 1_000 + i, client: '127.0.0.1', method: 'GET', path: `/r${i}`, port: 8000, status: 200, bytes: i, durationMs: 0.5, woke: i === 0,
});
const command = (sandboxId: string, i: number): CommandLogRecord => ({
  sandboxId, at: 1_000 + i, pid: 100 + i, cmd: `echo ${i}`, exitCode: i % 2, signal: null, error: null, durationMs: 1.25, keyId: i === 0 ? 'key_1' : null,
});

export function logCases(h: StoreHarness): void {
  test('egress log: every field kept; newest first (append order), limited; other sandboxes apart; kept across reopen', async () => {
    const [a, b] = [sandbox(), sandbox()];
    const dns: EgressLogRecord = { sandboxId: a.id, at: 5, protocol: 'dns', destination: '', port: null, name: 'denied.test', verdict: 'denied', rule: null };
    const allowed: EgressLogRecord = { sandboxId: a.id, at: 6, protocol: 'tcp', destination: '198.51.100.7', port: 443, name: 'pkg.test', verdict: 'allowed', rule: '*.pkg.test:443' };
    const peer: EgressLogRecord = { ...egress(a.id, 7), verdict: 'allowed', peer: { sandboxId: b.id, network: 'backend' } };
    await withStore(h, 'egress_log', async (store) => {
      await store.insertSandbox(a);
      await store.insertSandbox(b);
      assert.equal(await store.appendEgressLog([dns, egress(b.id, 1), allowed, peer]), 4);
      assert.equal(await store.appendEgressLog([]), 0);
      assert.deepEqual(await store.listEgressLog(a.id, 10), [peer, allowed, dns]);
      assert.deepEqual(await store.listEgressLog(a.id, 1), [peer]);
      assert.deepEqual(await store.listEgressLog(b.id, 10), [egress(b.id, 1)]);
      assert.deepEqual(await store.listEgressLog('sbx_missing', 10), []);
      await store.appendEgressLog([egress(a.id, 0, { at: 1 })]);
      assert.equal((await store.listEgressLog(a.id, 1))[0]?.at, 1, 'order is append order, not `at`');
    });
    await withStore(h, 'egress_log', async (store) => {
      assert.equal((await store.listEgressLog(a.id, 10)).length, 4);
    });
  });

  test('egress log: unknown and killed sandboxes skipped, the rest of the batch stored; a refused batch stores nothing', async () => {
    await withStore(h, 'egress_log_skip', async (store) => {
      const live = sandbox();
      const dead = sandbox({ state: 'killed' });
      await store.insertSandbox(live);
      await store.insertSandbox(dead);
      assert.equal(await store.appendEgressLog([egress('sbx_missing', 1), egress(live.id, 2), egress(dead.id, 3), egress(live.id, 4)]), 2);
      assert.deepEqual((await store.listEgressLog(live.id, 10)).map((e) => e.port), [1004, 1002]);
      assert.deepEqual(await store.listEgressLog(dead.id, 10), []);
      await assert.rejects(store.appendEgressLog([egress(live.id, 5), egress(live.id, 6, { protocol: 'sctp' as EgressLogRecord['protocol'] })]));
      assert.equal((await store.listEgressLog(live.id, 10)).length, 2, 'a failed batch stores nothing');
    });
  });

  test('egress log: each sandbox keeps only its newest N entries; reads never exceed N', async () => {
    await withStore(h, 'egress_log_bound', async (store) => {
      const busy = sandbox();
      const quiet = sandbox();
      await store.insertSandbox(busy);
      await store.insertSandbox(quiet);
      await store.appendEgressLog([egress(quiet.id, 0), egress(quiet.id, 1)]);
      for (let i = 0; i < 25; i += 1) await store.appendEgressLog([egress(busy.id, i)]);
      await store.appendEgressLog(Array.from({ length: 40 }, (_, i) => egress(busy.id, 25 + i)));
      assert.deepEqual((await store.listEgressLog(busy.id, 1000)).map((e) => e.port), Array.from({ length: 10 }, (_, i) => 1064 - i));
      assert.deepEqual((await store.listEgressLog(quiet.id, 1000)).map((e) => e.port), [1001, 1000]);
    }, { egressLogMaxEntries: 10 });
  });

  test('ingress log: newest first, bounded per sandbox, unknown and killed sandboxes skipped; wakes counted', async () => {
    await withStore(h, 'ingress_log', async (store) => {
      await store.insertSandbox(sandbox({ id: 'sbx_a' }));
      await store.insertSandbox(sandbox({ id: 'sbx_b' }));
      assert.equal(await store.appendIngressLog([...Array.from({ length: 12 }, (_, i) => ingress('sbx_a', i)), ingress('sbx_b', 0), ingress('sbx_nope', 0)]), 13);
      assert.deepEqual((await store.listIngressLog('sbx_a', 100)).map((e) => e.path), ['/r11', '/r10', '/r9', '/r8', '/r7'], 'the newest 5, newest first');
      assert.deepEqual((await store.listIngressLog('sbx_b', 10))[0], ingress('sbx_b', 0), 'every field round-trips (woke as a boolean)');
      assert.deepEqual(await store.getIngressWakes('sbx_a'), { count: 0, lastAt: null });
      await store.recordIngressWake('sbx_a', 5_000);
      await store.recordIngressWake('sbx_a', 6_000);
      await store.recordIngressWake('sbx_nope', 6_000);
      assert.deepEqual(await store.getIngressWakes('sbx_a'), { count: 2, lastAt: 6_000 });
      assert.deepEqual(await store.getIngressWakes('sbx_nope'), { count: 0, lastAt: null });
      await store.updateSandbox('sbx_a', { state: 'killed' });
      assert.equal(await store.appendIngressLog([ingress('sbx_a', 99)]), 0, 'a killed sandbox logs nothing more');
    }, { ingressLogMaxEntries: 5 });
  });

  test('command log: kept after a kill, newest first, unknown sandboxes skipped, pruned by age', async () => {
    await withStore(h, 'command_log', async (store) => {
      await store.insertSandbox(sandbox({ id: 'sbx_c' }));
      assert.equal(await store.appendCommandLog([command('sbx_c', 0), command('sbx_c', 1), command('sbx_nope', 2)]), 2);
      await store.updateSandbox('sbx_c', { state: 'killed' });
      assert.equal(await store.appendCommandLog([command('sbx_c', 2)]), 1, "a killed sandbox's commands are still kept");
      assert.deepEqual(await store.listCommandLog('sbx_c', 10), [command('sbx_c', 2), command('sbx_c', 1), command('sbx_c', 0)]);
      assert.equal(await store.pruneCommandLog(1_002), 2);
      assert.deepEqual((await store.listCommandLog('sbx_c', 10)).map((c) => c.pid), [102]);
    });
  });
}
