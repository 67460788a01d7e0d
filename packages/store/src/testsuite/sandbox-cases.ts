/**
 * Conformance cases: sandbox rows (insert, patch, listing, filters, activity, the kill's write, fork trees).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SandboxRecord } from '@ramify/core';
import { sandbox, withStore, type StoreHarness } from './harness.js';

export function sandboxCases(h: StoreHarness): void {
  test('sandboxes, operations and JSON fields are kept across close and reopen', async () => {
    const record = sandbox({
      metadata: { team: 'a' }, operation: { kind: 'fork', snapshotId: 'snap_x', childIds: ['sbx_a', 'sbx_b'], parentWasRunning: true },
      ingress: { ports: [{ port: 80, access: 'public' }, { port: 3000, access: 'token' }], autoResume: false }, autoPause: { idleMs: 600_000 }, diskSizeMB: 2048,
    });
    await withStore(h, 'sandbox_reopen', async (store) => {
      await store.insertSandbox(record);
      assert.deepEqual(await store.getSandbox(record.id), record, 'every field round-trips');
      await store.updateSandbox(record.id, { state: 'pausing', endAt: null, autoPause: null });
    });
    await withStore(h, 'sandbox_reopen', async (store) => {
      assert.deepEqual(await store.getSandbox(record.id), { ...record, state: 'pausing', endAt: null, autoPause: null });
      assert.equal(await store.getSandbox('sbx_missing'), null);
    });
  });

  test('insert of an existing id is CONFLICT; update of an unknown id is SANDBOX_NOT_FOUND; no root filesystem is INTERNAL', async () => {
    await withStore(h, 'sandbox_conflict', async (store) => {
      const record = sandbox();
      await store.insertSandbox(record);
      await assert.rejects(store.insertSandbox(record), { code: 'CONFLICT' });
      await assert.rejects(store.updateSandbox('sbx_nope', { state: 'killed' }), { code: 'SANDBOX_NOT_FOUND' });
      await assert.rejects(store.insertSandbox(sandbox({ rootfsDir: '' })), { code: 'INTERNAL' });
      assert.deepEqual(await store.getSandbox(record.id), record, 'the stored row is untouched');
    });
  });

  test('a not-found message names a long id cut as the API cuts every received value; details keep it whole', async () => {
    await withStore(h, 'sandbox_not_found_cut', async (store) => {
      const long = `sbx_${'x'.repeat(100)}`;
      const cut = { code: 'SANDBOX_NOT_FOUND', message: `sandbox '${long.slice(0, 40)}...' not found`, details: { id: long } };
      await assert.rejects(store.updateSandbox(long, { state: 'killed' }), cut, 'a missing row');
      await assert.rejects(store.putEgressPolicy(long, { mode: 'open', rules: [] }, 1), cut, 'a missing parent row');
      await assert.rejects(store.ensureAccessToken(long, 'rit_x', 1), cut);
      await assert.rejects(store.updateSnapshot(`snap_${'y'.repeat(100)}`, { status: 'ready' }), { code: 'SNAPSHOT_NOT_FOUND', message: `snapshot 'snap_${'y'.repeat(35)}...' not found` });
    });
  });

  test('recordActivity: one batch, never moves a time back, skips unknown sandboxes', async () => {
    await withStore(h, 'sandbox_activity', async (store) => {
      const [a, b] = [sandbox(), sandbox({ lastActiveAt: 5_000 })];
      for (const r of [a, b]) await store.insertSandbox(r);
      assert.equal((await store.getSandbox(a.id))?.lastActiveAt, null);
      await store.recordActivity([{ sandboxId: a.id, at: 2_000 }, { sandboxId: b.id, at: 4_000 }, { sandboxId: 'sbx_gone', at: 9_000 }]);
      assert.equal((await store.getSandbox(a.id))?.lastActiveAt, 2_000);
      assert.equal((await store.getSandbox(b.id))?.lastActiveAt, 5_000, 'an older time does not lower it');
      await store.updateSandbox(a.id, { lastActiveAt: 3_000 });
      assert.equal((await store.getSandbox(a.id))?.lastActiveAt, 3_000);
      await store.recordActivity([]);
    });
  });

  test('lists in creation order with cursor pagination, state and metadata filters; a bad cursor is VALIDATION_FAILED', async () => {
    await withStore(h, 'sandbox_list', async (store) => {
      const made: SandboxRecord[] = [];
      for (let i = 0; i < 7; i++) {
        const r = sandbox({ state: i % 3 === 0 ? 'paused' : 'running', metadata: { team: i % 2 === 0 ? 'red' : 'blue', n: String(i) } });
        made.push(r);
        await store.insertSandbox(r);
      }
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await store.listSandboxes({ limit: 3, cursor });
        seen.push(...page.sandboxes.map((s) => s.id));
        cursor = page.nextCursor ?? undefined;
        pages += 1;
      } while (cursor);
      assert.deepEqual(seen, made.map((r) => r.id));
      assert.equal(pages, 3);
      assert.deepEqual((await store.listSandboxes({ metadata: { team: 'red' } })).sandboxes.map((s) => s.metadata.n), ['0', '2', '4', '6']);
      assert.deepEqual((await store.listSandboxes({ metadata: { team: 'red' }, states: ['running'] })).sandboxes.map((s) => s.metadata.n), ['2', '4']);
      assert.deepEqual((await store.listSandboxes({ metadata: { team: 'red', n: '4' } })).sandboxes.map((s) => s.id), [made[4]?.id]);
      assert.equal((await store.listSandboxes({ metadata: { team: 'green' } })).sandboxes.length, 0);
      assert.equal((await store.listSandboxes({ teamId: 'acme' })).sandboxes.length, 0);
      await assert.rejects(store.listSandboxes({ cursor: 'garbage!' }), { code: 'VALIDATION_FAILED' });
    });
  });

  test('lists by creation time, not id (a pooled sandbox has an older id), ties by id; an id-only cursor still pages', async () => {
    await withStore(h, 'sandbox_list_created', async (store) => {
      // Ids in one order, creation times in another: b was made (id) first but created last.
      const b = sandbox({ createdAt: 3_000 });
      const a = sandbox({ createdAt: 1_000 });
      const twin1 = sandbox({ createdAt: 2_000 });
      const twin2 = sandbox({ createdAt: 2_000 });
      for (const r of [b, a, twin1, twin2]) await store.insertSandbox(r);
      const want = [a.id, twin1.id, twin2.id, b.id];
      assert.deepEqual((await store.listSandboxes({})).sandboxes.map((s) => s.id), want);
      const seen: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await store.listSandboxes({ limit: 1, cursor });
        seen.push(...page.sandboxes.map((s) => s.id));
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      assert.deepEqual(seen, want);
      // A cursor an earlier daemon issued names only the id.
      const old = Buffer.from(JSON.stringify({ after: twin1.id }), 'utf8').toString('base64url');
      assert.deepEqual((await store.listSandboxes({ cursor: old })).sandboxes.map((s) => s.id), [twin2.id, b.id]);
    });
  });

  test('endAtOrBefore and withOperation filters; a metadata patch rewrites the filter rows', async () => {
    await withStore(h, 'sandbox_filters', async (store) => {
      const due = sandbox({ endAt: 100 });
      const later = sandbox({ endAt: 10_000 });
      const noClock = sandbox({ state: 'paused', endAt: null, operation: { kind: 'kill' } });
      for (const r of [due, later, noClock]) await store.insertSandbox(r);
      assert.deepEqual((await store.listSandboxes({ endAtOrBefore: 500 })).sandboxes.map((s) => s.id), [due.id]);
      assert.deepEqual((await store.listSandboxes({ withOperation: true })).sandboxes.map((s) => s.id), [noClock.id]);
      const r = sandbox({ metadata: { k: 'old' } });
      await store.insertSandbox(r);
      await store.updateSandbox(r.id, { metadata: { k: 'new' } });
      assert.equal((await store.listSandboxes({ metadata: { k: 'old' } })).sandboxes.length, 0);
      assert.equal((await store.listSandboxes({ metadata: { k: 'new' } })).sandboxes.length, 1);
    });
  });

  test('resource holders: the states asked, and paused sandboxes inside a fork of a running parent; counts per state and runtime', async () => {
    await withStore(h, 'sandbox_holders', async (store) => {
      const running = sandbox({ memoryMB: 256 });
      const forking = sandbox({ state: 'paused', operation: { kind: 'fork', snapshotId: 'snap_f', childIds: [], parentWasRunning: true } });
      const paused = sandbox({ state: 'paused', operation: { kind: 'fork', snapshotId: 'snap_g', childIds: [], parentWasRunning: false } });
      const other = sandbox({ teamId: 'acme' });
      const killed = sandbox({ state: 'killed' });
      for (const r of [running, forking, paused, other, killed]) await store.insertSandbox(r);
      assert.deepEqual(await store.listResourceHolders('default', ['running']), [running, forking].map((r) => ({ id: r.id, memoryMB: r.memoryMB })).sort((a, b) => a.id.localeCompare(b.id)));
      assert.deepEqual((await store.listResourceHolders('default', [])).map((r) => r.id), [forking.id]);
      const counts = (await store.countSandboxes()).map((c) => `${c.state}/${c.runtime}=${c.count}`).sort();
      assert.deepEqual(counts, ['paused/gvisor=2', 'running/gvisor=2']);
    });
  });

  test('fork trees: the subtree parents first, each sandbox\'s root', async () => {
    await withStore(h, 'sandbox_trees', async (store) => {
      await store.insertSandbox(sandbox({ id: 'sbx_r' }));
      await store.insertSandbox(sandbox({ id: 'sbx_c1', parentId: 'sbx_r' }));
      await store.insertSandbox(sandbox({ id: 'sbx_c2', parentId: 'sbx_r' }));
      await store.insertSandbox(sandbox({ id: 'sbx_g', parentId: 'sbx_c1', state: 'killed' }));
      assert.deepEqual((await store.subtree('sbx_r')).map((s) => s.id), ['sbx_r', 'sbx_c1', 'sbx_c2', 'sbx_g']);
      assert.deepEqual((await store.subtree('sbx_c1')).map((s) => s.id), ['sbx_c1', 'sbx_g']);
      assert.deepEqual(await store.subtree('sbx_none'), []);
      assert.deepEqual([...(await store.treeRoots(['sbx_g', 'sbx_c2', 'sbx_r']))].sort(), [['sbx_c2', 'sbx_r'], ['sbx_g', 'sbx_r'], ['sbx_r', 'sbx_r']]);
      assert.equal((await store.treeRoots([])).size, 0);
    });
  });

  test('a kill deletes the egress and ingress logs, SSH tokens and network memberships in the same write', async () => {
    await withStore(h, 'sandbox_kill', async (store) => {
      const doomed = sandbox();
      await store.insertSandbox(doomed);
      await store.appendEgressLog([{ sandboxId: doomed.id, at: 1, protocol: 'tcp', destination: '192.0.2.1', port: 1, name: null, verdict: 'denied', rule: null }]);
      await store.appendIngressLog([{ sandboxId: doomed.id, at: 1, client: '127.0.0.1', method: 'GET', path: '/', port: 80, status: 200, bytes: 1, durationMs: 1, woke: false }]);
      await store.insertSshToken({ hash: 'h_kill', sandboxId: doomed.id, ownerApiKeyId: null, createdAt: 1, expiresAt: 9e12 });
      await store.insertNetwork({ id: 'net_kill', teamId: 'default', name: 'killnet', createdAt: 1 });
      await store.addNetworkMember({ networkId: 'net_kill', sandboxId: doomed.id, alias: 'a', attachedAt: 1 });
      await store.updateSandbox(doomed.id, { state: 'killing' });
      assert.equal((await store.listEgressLog(doomed.id, 10)).length, 1, 'still there while killing');
      const killed = await store.updateSandbox(doomed.id, { state: 'killed', slot: null });
      assert.equal(killed.state, 'killed');
      assert.deepEqual(await store.listEgressLog(doomed.id, 10), []);
      assert.deepEqual(await store.listIngressLog(doomed.id, 10), []);
      assert.equal(await store.findSshToken('h_kill'), null);
      assert.deepEqual(await store.networksOfSandbox(doomed.id), []);
      await store.deleteNetwork('net_kill');
    });
  });
}
