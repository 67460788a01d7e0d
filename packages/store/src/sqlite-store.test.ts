import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxRecord, SnapshotRecord } from '@ramify/core';
import { appliedMigrations, MIGRATIONS, SqliteStore } from './index.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-store-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

let seq = 0;
function sandbox(overrides: Partial<SandboxRecord> = {}): SandboxRecord {
  seq += 1;
  return {
    id: `sbx_${String(seq).padStart(26, '0')}`,
    teamId: 'default',
    state: 'running',
    runtime: 'gvisor',
    templateId: 'tpl_1',
    sourceSnapshotId: 'snap_tpl',
    rootfsDir: '/layers/files-1/rootfs',
    parentId: null,
    cpuCount: 1,
    memoryMB: 512,
    diskSizeMB: null,
    metadata: {},
    envs: { A: '1' },
    createdAt: 1_700_000_000_000 + seq,
    timeoutMs: 300_000,
    onTimeout: 'pause',
    endAt: 1_700_000_300_000,
    slot: null,
    pausedSnapshotId: null,
    error: null,
    operation: null,
    ingress: { ports: [], autoResume: null },
    autoPause: null,
    lastActiveAt: null, hostId: null,
    ...overrides,
  };
}

function snapshot(overrides: Partial<SnapshotRecord> = {}): SnapshotRecord {
  seq += 1;
  return {
    id: `snap_${seq}`,
    teamId: 'default',
    name: null,
    kind: 'pause',
    status: 'ready',
    runtime: 'gvisor',
    templateId: 'tpl_1',
    sandboxId: null,
    parentSnapshotId: null,
    sizeBytes: 100,
    createdAt: 1_700_000_000_000 + seq,
    cpuCount: 1,
    memoryMB: 512,
    diskSizeMB: null,
    rootfsDir: '/layers/files-1/rootfs',
    envs: null,
    egress: null,
    hostId: null,
    ...overrides,
  };
}

describe('SqliteStore (real SQLite file)', () => {
  test('persists sandboxes, operations and JSON fields across close and reopen', async () => {
    const path = join(dir, 'reopen.db');
    const store = new SqliteStore({ path });
    const record = sandbox({ metadata: { team: 'a' }, operation: { kind: 'fork', snapshotId: 'snap_x', childIds: ['sbx_a', 'sbx_b'], parentWasRunning: true } });
    await store.insertSandbox(record);
    await store.updateSandbox(record.id, { state: 'pausing', endAt: null });
    await store.close();
    assert.equal(statSync(path).mode & 0o777, 0o600);

    const reopened = new SqliteStore({ path });
    const loaded = await reopened.getSandbox(record.id);
    assert.deepEqual(loaded, { ...record, state: 'pausing', endAt: null });
    assert.deepEqual(appliedMigrations(reopened.db), MIGRATIONS.map((m) => m.version));
    assert.equal(reopened.db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal(reopened.db.pragma('foreign_keys', { simple: true }), 1);
    await reopened.close();
  });

  test('recordActivity: one batch, never moves a time back, skips unknown sandboxes, kept across reopen', async () => {
    const path = join(dir, 'activity.db');
    const store = new SqliteStore({ path });
    const [a, b] = [sandbox(), sandbox({ lastActiveAt: 5_000 })];
    for (const r of [a, b]) await store.insertSandbox(r);
    assert.equal((await store.getSandbox(a.id))?.lastActiveAt, null);
    await store.recordActivity([{ sandboxId: a.id, at: 2_000 }, { sandboxId: b.id, at: 4_000 }, { sandboxId: 'sbx_gone', at: 9_000 }]);
    assert.equal((await store.getSandbox(a.id))?.lastActiveAt, 2_000);
    assert.equal((await store.getSandbox(b.id))?.lastActiveAt, 5_000, 'an older time does not lower it');
    await store.updateSandbox(a.id, { lastActiveAt: 3_000 });
    await store.close();
    const reopened = new SqliteStore({ path });
    assert.equal((await reopened.getSandbox(a.id))?.lastActiveAt, 3_000);
    await reopened.close();
  });

  test('insert of an existing id is CONFLICT; update of an unknown id is SANDBOX_NOT_FOUND', async () => {
    const store = new SqliteStore({ path: join(dir, 'conflict.db') });
    const record = sandbox();
    await store.insertSandbox(record);
    await assert.rejects(store.insertSandbox(record), { code: 'CONFLICT' });
    await assert.rejects(store.updateSandbox('sbx_nope', { state: 'killed' }), { code: 'SANDBOX_NOT_FOUND' });
    await store.close();
  });

  test('lists in creation order with cursor pagination, state and metadata filters', async () => {
    const store = new SqliteStore({ path: join(dir, 'list.db') });
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

    const red = await store.listSandboxes({ metadata: { team: 'red' } });
    assert.deepEqual(red.sandboxes.map((s) => s.metadata.n), ['0', '2', '4', '6']);
    const redRunning = await store.listSandboxes({ metadata: { team: 'red' }, states: ['running'] });
    assert.deepEqual(redRunning.sandboxes.map((s) => s.metadata.n), ['2', '4']);
    const both = await store.listSandboxes({ metadata: { team: 'red', n: '4' } });
    assert.deepEqual(both.sandboxes.map((s) => s.id), [made[4].id]);
    assert.equal((await store.listSandboxes({ metadata: { team: 'green' } })).sandboxes.length, 0);
    await assert.rejects(store.listSandboxes({ cursor: 'garbage!' }), { code: 'VALIDATION_FAILED' });
    await store.close();
  });

  test('endAtOrBefore and withOperation filters', async () => {
    const store = new SqliteStore({ path: join(dir, 'due.db') });
    const due = sandbox({ endAt: 100 });
    const later = sandbox({ endAt: 10_000 });
    const noClock = sandbox({ state: 'paused', endAt: null, operation: { kind: 'kill' } });
    for (const r of [due, later, noClock]) await store.insertSandbox(r);
    assert.deepEqual((await store.listSandboxes({ endAtOrBefore: 500 })).sandboxes.map((s) => s.id), [due.id]);
    assert.deepEqual((await store.listSandboxes({ withOperation: true })).sandboxes.map((s) => s.id), [noClock.id]);
    await store.close();
  });

  test('metadata patch rewrites the filter rows', async () => {
    const store = new SqliteStore({ path: join(dir, 'meta.db') });
    const r = sandbox({ metadata: { k: 'old' } });
    await store.insertSandbox(r);
    await store.updateSandbox(r.id, { metadata: { k: 'new' } });
    assert.equal((await store.listSandboxes({ metadata: { k: 'old' } })).sandboxes.length, 0);
    assert.equal((await store.listSandboxes({ metadata: { k: 'new' } })).sandboxes.length, 1);
    await store.close();
  });

  test('snapshots: unique names, updates, references by live sandboxes and templates', async () => {
    const store = new SqliteStore({ path: join(dir, 'snap.db') });
    const s1 = snapshot({ name: 'golden', kind: 'named' });
    await store.insertSnapshot(s1);
    await assert.rejects(store.insertSnapshot(snapshot({ name: 'golden' })), { code: 'CONFLICT' });
    assert.equal((await store.findSnapshotByName('golden', 'default'))?.id, s1.id);
    const s2 = snapshot({ status: 'pending' });
    await store.insertSnapshot(s2);
    await assert.rejects(store.updateSnapshot(s2.id, { name: 'golden' }), { code: 'CONFLICT' });
    assert.equal((await store.updateSnapshot(s2.id, { status: 'ready', sizeBytes: 42 })).sizeBytes, 42);
    // Envs: null (unknown) by default here; recorded ones round-trip, and an update replaces them whole.
    assert.equal((await store.getSnapshot(s1.id))?.envs, null);
    assert.deepEqual((await store.updateSnapshot(s2.id, { envs: { DATA_DIR: '/srv/data', EMPTY: '' } })).envs, { DATA_DIR: '/srv/data', EMPTY: '' });
    assert.deepEqual((await store.updateSnapshot(s2.id, { envs: { B: '2' } })).envs, { B: '2' });
    const s3 = snapshot({ envs: { X: 'y' } });
    await store.insertSnapshot(s3);
    assert.deepEqual((await store.getSnapshot(s3.id))?.envs, { X: 'y' });
    await store.deleteSnapshot(s3.id);

    const paused = sandbox({ state: 'paused', pausedSnapshotId: s2.id });
    const child = sandbox({ sourceSnapshotId: s2.id });
    const dead = sandbox({ state: 'killed', sourceSnapshotId: s2.id });
    for (const r of [paused, child, dead]) await store.insertSandbox(r);
    await store.putTemplate({ id: 'tpl_x', teamId: 'default', name: 'base', runtime: 'gvisor', specHash: 'h', snapshotId: s1.id, images: [], parent: null, envs: {}, sizeBytes: 1, rootfsDir: '/r', createdAt: 1 });
    assert.deepEqual(await store.snapshotReferences(s2.id), { pausedBy: [paused.id], sourceOf: [child.id], templates: [] });
    assert.deepEqual(await store.snapshotReferences(s1.id), { pausedBy: [], sourceOf: [], templates: ['tpl_x'] });
    assert.deepEqual((await store.listSnapshots({ kinds: ['named'] })).map((s) => s.id), [s1.id]);
    await store.deleteSnapshot(s1.id);
    assert.equal(await store.getSnapshot(s1.id), null);
    await store.close();
  });

  test('templates: upsert by id, unique names', async () => {
    const store = new SqliteStore({ path: join(dir, 'tpl.db') });
    const t = { id: 'tpl_a', teamId: 'default', name: 'base', runtime: 'gvisor' as const, specHash: 'h1', snapshotId: 'snap_1', images: [], parent: null, envs: {}, sizeBytes: 1, rootfsDir: '/r', createdAt: 1 };
    await store.putTemplate(t);
    await store.putTemplate({ ...t, specHash: 'h2' });
    assert.equal((await store.findTemplateByName('base', 'default'))?.specHash, 'h2');
    await assert.rejects(store.putTemplate({ ...t, id: 'tpl_b' }), { code: 'CONFLICT' });
    assert.equal((await store.listTemplates()).length, 1);
    // One image per runtime; the default one first; any of them is a reference to its snapshot.
    await store.putTemplate({ ...t, images: [{ runtime: 'microvm', snapshotId: 'snap_vm' }] });
    assert.deepEqual((await store.getTemplate('tpl_a'))?.images, [{ runtime: 'gvisor', snapshotId: 'snap_1' }, { runtime: 'microvm', snapshotId: 'snap_vm' }]);
    assert.deepEqual((await store.snapshotReferences('snap_vm')).templates, ['tpl_a']);
    // Envs round-trip and are replaced whole by an upsert.
    await store.putTemplate({ ...t, envs: { DATA_DIR: '/srv/data', EMPTY: '' } });
    assert.deepEqual((await store.getTemplate('tpl_a'))?.envs, { DATA_DIR: '/srv/data', EMPTY: '' });
    await store.putTemplate({ ...t, envs: { B: '2' } });
    assert.deepEqual((await store.findTemplateByName('base', 'default'))?.envs, { B: '2' });
    await store.close();
  });

  test('audit log appends with increasing ids and lists newest first, filtered by sandbox', async () => {
    const path = join(dir, 'audit.db');
    const store = new SqliteStore({ path });
    const base = { at: 1, apiKeyId: 'key_1', teamId: 'default', method: 'POST', path: '/v1/sandboxes', action: 'sandbox.create', status: 201, errorCode: null, tool: null };
    const a = await store.appendAudit({ ...base, sandboxId: 'sbx_1', tool: 'sandbox_create' });
    const b = await store.appendAudit({ ...base, sandboxId: 'sbx_2', status: 409, errorCode: 'INVALID_STATE' });
    const c = await store.appendAudit({ ...base, sandboxId: 'sbx_1' });
    assert.ok(a < b && b < c);
    await store.close();
    const reopened = new SqliteStore({ path });
    assert.deepEqual((await reopened.listAudit({})).map((e) => e.id), [c, b, a]);
    assert.deepEqual((await reopened.listAudit({ sandboxId: 'sbx_1' })).map((e) => e.id), [c, a]);
    assert.deepEqual((await reopened.listAudit({ limit: 1, beforeId: c })).map((e) => e.errorCode), ['INVALID_STATE']);
    assert.deepEqual((await reopened.listAudit({})).map((e) => e.tool), [null, null, 'sandbox_create']);
    const other = await reopened.appendAudit({ ...base, teamId: 'acme', sandboxId: 'sbx_3' });
    assert.deepEqual((await reopened.listAudit({ teamId: 'acme' })).map((e) => e.id), [other]);
    assert.deepEqual((await reopened.listAudit({ teamId: 'default' })).map((e) => e.id), [c, b, a]);
    await reopened.close();
  });

  test('api keys: lookup by hash, team and role kept, listed per team, revocation hides a key', async () => {
    const store = new SqliteStore({ path: join(dir, 'keys.db') });
    await store.insertApiKey({ id: 'key_1', teamId: 'default', role: 'admin', name: 'default', hash: 'abc', prefix: 'rmf_abcd', createdAt: 1, lastUsedAt: null, expiresAt: null, revokedAt: null });
    await assert.rejects(
      store.insertApiKey({ id: 'key_2', teamId: 'nope', role: 'member', name: 'm', hash: 'def', prefix: 'rmf_defg', createdAt: 2, lastUsedAt: null, expiresAt: 9, revokedAt: null }),
      { code: 'TEAM_NOT_FOUND' },
    );
    await store.insertTeam({ id: 'acme', createdAt: 1, quota: { maxRunning: 2, maxMemoryMB: null, maxForksPerCall: 4 } });
    await store.insertApiKey({ id: 'key_2', teamId: 'acme', role: 'member', name: 'm', hash: 'def', prefix: 'rmf_defg', createdAt: 2, lastUsedAt: null, expiresAt: 9, revokedAt: null });
    assert.deepEqual(await store.getApiKey('key_2'), { id: 'key_2', teamId: 'acme', role: 'member', name: 'm', hash: 'def', prefix: 'rmf_defg', createdAt: 2, lastUsedAt: null, expiresAt: 9, revokedAt: null });
    assert.deepEqual((await store.listApiKeys({ teamId: 'acme' })).map((k) => k.id), ['key_2']);
    assert.equal((await store.findApiKeyByHash('abc'))?.id, 'key_1');
    await store.touchApiKey('key_1', 5);
    assert.equal((await store.listApiKeys())[0].lastUsedAt, 5);
    await store.revokeApiKey('key_1', 6);
    assert.equal(await store.findApiKeyByHash('abc'), null);
    await store.close();
  });

  test('slots: lowest free first, idempotent per sandbox, reused after release, bounded', async () => {
    const store = new SqliteStore({ path: join(dir, 'slots.db'), maxSlots: 3 });
    assert.equal(await store.allocateSlot('a', 'h1'), 1);
    assert.equal(await store.allocateSlot('b', 'h1'), 2);
    assert.equal(await store.allocateSlot('a', 'h1'), 1);
    assert.equal(await store.allocateSlot('c', 'h1'), 3);
    await assert.rejects(store.allocateSlot('d', 'h1'), { code: 'RUNTIME_UNAVAILABLE' });
    await store.releaseSlot('b');
    assert.equal(await store.allocateSlot('d', 'h1'), 2);
    assert.deepEqual(await store.listSlots('h1'), [
      { hostId: 'h1', slot: 1, sandboxId: 'a' },
      { hostId: 'h1', slot: 2, sandboxId: 'd' },
      { hostId: 'h1', slot: 3, sandboxId: 'c' },
    ]);
    await store.close();
  });

  test('slots are keyed by host: each host numbers its own from 1; a lease moves with its sandbox', async () => {
    const store = new SqliteStore({ path: join(dir, 'slots-hosts.db'), maxSlots: 2 });
    assert.equal(await store.allocateSlot('a', 'h1'), 1);
    assert.equal(await store.allocateSlot('b', 'h2'), 1, 'slot 1 of another host is free');
    assert.equal(await store.allocateSlot('c', 'h1'), 2);
    await assert.rejects(store.allocateSlot('d', 'h1'), { code: 'RUNTIME_UNAVAILABLE' });
    assert.equal(await store.allocateSlot('d', 'h2'), 2, 'h1 being full leaves h2 its own slots');
    // Resumed on h2 after h2's 'b' left: 'a' gives up its lease on h1 and takes h2's lowest free slot.
    await store.releaseSlot('b');
    assert.equal(await store.allocateSlot('a', 'h2'), 1);
    assert.deepEqual(await store.listSlots('h1'), [{ hostId: 'h1', slot: 2, sandboxId: 'c' }]);
    assert.deepEqual(await store.listSlots('h2'), [{ hostId: 'h2', slot: 1, sandboxId: 'a' }, { hostId: 'h2', slot: 2, sandboxId: 'd' }]);
    await store.close();
  });

  test('host ids: recorded on sandboxes and snapshots, filter listings, and rows without one are adopted once', async () => {
    const store = new SqliteStore({ path: join(dir, 'hosts.db') });
    const mine = sandbox({ hostId: 'h1' });
    const theirs = sandbox({ hostId: 'h2' });
    const old = sandbox({ hostId: null, slot: 1 });
    for (const s of [mine, theirs, old]) await store.insertSandbox(s);
    await store.insertSnapshot(snapshot({ id: 'snap_h2', hostId: 'h2' }));
    await store.insertSnapshot(snapshot({ id: 'snap_old', hostId: null }));
    // A lease from before migration 26 names no host ('').
    store.db.prepare("INSERT INTO slots (host_id, slot, sandbox_id) VALUES ('', 1, ?)").run(old.id);
    const ids = async (hostId: string): Promise<string[]> => (await store.listSandboxes({ hostId })).sandboxes.map((s) => s.id);
    assert.deepEqual(await ids('h1'), [mine.id]);
    assert.deepEqual(await store.adoptUnhostedRows('h1'), { sandboxes: 1, snapshots: 1, slots: 1 });
    assert.deepEqual(await ids('h1'), [mine.id, old.id]);
    assert.deepEqual(await ids('h2'), [theirs.id]);
    assert.equal((await store.getSnapshot('snap_old'))?.hostId, 'h1');
    assert.equal((await store.getSnapshot('snap_h2'))?.hostId, 'h2');
    assert.deepEqual(await store.listSlots('h1'), [{ hostId: 'h1', slot: 1, sandboxId: old.id }]);
    assert.deepEqual(await store.adoptUnhostedRows('h2'), { sandboxes: 0, snapshots: 0, slots: 0 }, 'adopted rows are not adopted again');
    assert.equal((await store.updateSandbox(old.id, { hostId: 'h2' })).hostId, 'h2', 'a resume elsewhere moves it');
    await store.close();
  });
});
