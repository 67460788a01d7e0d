/**
 * Conformance cases: teams, API keys, the audit log, network slots, SSH keys and tokens, access tokens,
 * egress policies.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sandbox, snapshot, team, withStore, type StoreHarness } from './harness.js';

const sshKey = (id: string, fingerprint: string, teamId = 'default') => ({
  id, teamId, ownerApiKeyId: 'key_1', name: id, type: 'ssh-ed25519', fingerprint, publicKey: `ssh-ed25519 ${id}`, createdAt: 1,
});

export function accessCases(h: StoreHarness): void {
  test('teams: the default team exists; ids are unique and checked; quotas replaced whole', async () => {
    await withStore(h, 'teams', async (store) => {
      assert.deepEqual((await store.listTeams()).map((t) => t.id), ['default']);
      await store.insertTeam({ id: 'acme', createdAt: 5, quota: { maxRunning: 2, maxMemoryMB: null, maxForksPerCall: 4 } });
      await assert.rejects(store.insertTeam(team('acme')), { code: 'CONFLICT' });
      await assert.rejects(store.insertTeam(team('Bad Team')), { code: 'CONFLICT' }, 'refused by the id check');
      assert.deepEqual(await store.getTeam('acme'), { id: 'acme', createdAt: 5, quota: { maxRunning: 2, maxMemoryMB: null, maxForksPerCall: 4 } });
      assert.deepEqual((await store.setTeamQuota('acme', { maxRunning: null, maxMemoryMB: 4096, maxForksPerCall: null })).quota, { maxRunning: null, maxMemoryMB: 4096, maxForksPerCall: null });
      await assert.rejects(store.setTeamQuota('nope', { maxRunning: 1, maxMemoryMB: null, maxForksPerCall: null }), { code: 'TEAM_NOT_FOUND' });
      // Only the limits given change (two operators setting different limits at once keep both).
      await Promise.all([store.setTeamQuota('acme', { maxRunning: 3 }), store.setTeamQuota('acme', { maxForksPerCall: 2 })]);
      assert.deepEqual((await store.setTeamQuota('acme', {})).quota, { maxRunning: 3, maxMemoryMB: 4096, maxForksPerCall: 2 });
      await assert.rejects(store.setTeamQuota('nope', {}), { code: 'TEAM_NOT_FOUND' });
      assert.equal(await store.getTeam('nope'), null);
      assert.deepEqual((await store.listTeams()).map((t) => t.id), ['acme', 'default']);
    });
  });

  test('API keys: lookup by hash, team and role kept, listed per team, an unknown team refused, revocation hides a key', async () => {
    await withStore(h, 'api_keys', async (store) => {
      const key1 = { id: 'key_1', teamId: 'default', role: 'admin' as const, name: 'default', hash: 'abc', prefix: 'rmf_abcd', createdAt: 1, lastUsedAt: null, expiresAt: null, revokedAt: null };
      const key2 = { id: 'key_2', teamId: 'acme', role: 'member' as const, name: 'm', hash: 'def', prefix: 'rmf_defg', createdAt: 2, lastUsedAt: null, expiresAt: 9, revokedAt: null };
      await store.insertApiKey(key1);
      await assert.rejects(store.insertApiKey(key2), { code: 'TEAM_NOT_FOUND' });
      await store.insertTeam(team('acme'));
      await store.insertApiKey(key2);
      await assert.rejects(store.insertApiKey(key2), { code: 'CONFLICT' });
      assert.deepEqual(await store.getApiKey('key_2'), key2);
      assert.deepEqual((await store.listApiKeys({ teamId: 'acme' })).map((k) => k.id), ['key_2']);
      assert.deepEqual((await store.listApiKeys()).map((k) => k.id), ['key_1', 'key_2']);
      assert.equal((await store.findApiKeyByHash('abc'))?.id, 'key_1');
      await store.touchApiKey('key_1', 5);
      assert.equal((await store.getApiKey('key_1'))?.lastUsedAt, 5);
      await store.revokeApiKey('key_1', 6);
      await store.revokeApiKey('key_1', 7);
      assert.equal((await store.getApiKey('key_1'))?.revokedAt, 6, 'the first revocation time is kept');
      assert.equal(await store.findApiKeyByHash('abc'), null);
    });
  });

  test('audit log: numbered per stream, newest first, filtered by sandbox and team, paged backwards, kept across reopen', async () => {
    const base = { at: 1, apiKeyId: 'key_1', teamId: 'default', method: 'POST', path: '/v1/sandboxes', action: 'sandbox.create', status: 201, errorCode: null, tool: null };
    const numbers: Array<{ seq: number; teamSeq: number }> = [];
    await withStore(h, 'audit', async (store) => {
      numbers.push(await store.appendAudit({ ...base, sandboxId: 'sbx_1', tool: 'sandbox_create' }));
      numbers.push(await store.appendAudit({ ...base, sandboxId: 'sbx_2', status: 409, errorCode: 'INVALID_STATE' }));
      numbers.push(await store.appendAudit({ ...base, sandboxId: 'sbx_1' }));
    });
    assert.deepEqual(numbers.map((n) => n.teamSeq), [1, 2, 3]);
    const [a, b, c] = numbers.map((n) => n.seq) as [number, number, number];
    assert.ok(a < b && b < c);
    await withStore(h, 'audit', async (store) => {
      assert.deepEqual((await store.listAudit({})).map((e) => e.seq), [c, b, a]);
      assert.deepEqual((await store.listAudit({ sandboxId: 'sbx_1' })).map((e) => e.seq), [c, a]);
      assert.deepEqual((await store.listAudit({ teamId: 'default', limit: 1, beforeTeamSeq: 3 })).map((e) => e.errorCode), ['INVALID_STATE']);
      assert.deepEqual((await store.listAudit({})).map((e) => e.tool), [null, null, 'sandbox_create']);
      const other = await store.appendAudit({ ...base, teamId: 'acme', sandboxId: 'sbx_3' });
      const anonymous = await store.appendAudit({ ...base, apiKeyId: null, teamId: null, sandboxId: null, status: 401, errorCode: 'UNAUTHORIZED' });
      assert.deepEqual([other.teamSeq, anonymous.teamSeq], [1, 1], 'each stream counts from 1');
      assert.deepEqual((await store.listAudit({ teamId: 'acme' })).map((e) => e.seq), [other.seq]);
      assert.deepEqual((await store.listAudit({ teamId: null })).map((e) => [e.seq, e.teamSeq, e.errorCode]), [[anonymous.seq, 1, 'UNAUTHORIZED']]);
      assert.deepEqual((await store.listAudit({ teamId: 'default' })).map((e) => e.teamSeq), [3, 2, 1]);
      assert.deepEqual((await store.listAudit({ teamId: 'default', beforeTeamSeq: 2 }))[0], { ...base, seq: a, teamSeq: 1, sandboxId: 'sbx_1', tool: 'sandbox_create' });
      assert.deepEqual((await store.listAudit({})).map((e) => e.seq), [anonymous.seq, other.seq, c, b, a], 'the whole log, in global order');
    });
  });

  test("audit ids: two teams' streams are independent (B's entries move none of A's numbers); paging a stream by its cursor", async () => {
    const entry = (teamId: string | null, sandboxId: string | null = null) => ({
      at: 1, apiKeyId: teamId === null ? null : `key_${teamId}`, teamId, method: 'POST', path: '/v1/sandboxes', action: 'sandbox.create', sandboxId, status: teamId === null ? 401 : 201,
      errorCode: teamId === null ? 'UNAUTHORIZED' : null, tool: null,
    });
    await withStore(h, 'audit_streams', async (store) => {
      const a: number[] = [];
      const b: number[] = [];
      // A and B interleaved, B busier, anonymous calls between: A's numbers stay 1..6 without a gap.
      for (let i = 0; i < 6; i++) {
        a.push((await store.appendAudit(entry('team-a', i % 2 === 0 ? 'sbx_a' : null))).teamSeq);
        for (let j = 0; j < 3; j++) b.push((await store.appendAudit(entry('team-b'))).teamSeq);
        await store.appendAudit(entry(null));
      }
      assert.deepEqual(a, [1, 2, 3, 4, 5, 6]);
      assert.deepEqual(b, Array.from({ length: 18 }, (_, i) => i + 1));
      const ids = async (q: { teamId: string | null; beforeTeamSeq?: number; limit?: number; sandboxId?: string }): Promise<number[]> => (await store.listAudit(q)).map((e) => e.teamSeq);
      // Paging A backwards by the last id of each page reaches every entry once, and only A's.
      const pages: number[][] = [];
      for (let before: number | undefined; ;) {
        const page = await ids({ teamId: 'team-a', limit: 4, ...(before !== undefined ? { beforeTeamSeq: before } : {}) });
        if (page.length === 0) break;
        pages.push(page);
        before = page.at(-1);
      }
      assert.deepEqual(pages, [[6, 5, 4, 3], [2, 1]]);
      assert.ok((await store.listAudit({ teamId: 'team-a', limit: 1000 })).every((e) => e.teamId === 'team-a'));
      // A cursor taken from B's stream (or past A's newest) only ever selects A's entries.
      assert.deepEqual(await ids({ teamId: 'team-a', beforeTeamSeq: 18 }), [6, 5, 4, 3, 2, 1]);
      assert.deepEqual(await ids({ teamId: 'team-a', beforeTeamSeq: 4 }), [3, 2, 1]);
      assert.deepEqual(await ids({ teamId: 'team-a', sandboxId: 'sbx_a', beforeTeamSeq: 5 }), [3, 1]);
      assert.deepEqual(await ids({ teamId: null, limit: 2, beforeTeamSeq: 6 }), [5, 4], 'the anonymous stream is numbered on its own');
    });
    // Numbering goes on after a reopen; a new team starts at 1.
    await withStore(h, 'audit_streams', async (store) => {
      assert.equal((await store.appendAudit(entry('team-a'))).teamSeq, 7);
      assert.equal((await store.appendAudit(entry(null))).teamSeq, 7);
      assert.equal((await store.appendAudit(entry('team-c'))).teamSeq, 1);
    });
  });

  test('slots: lowest free first, idempotent per sandbox, reused after release, bounded; concurrent allocations get distinct slots', async () => {
    await withStore(h, 'slots', async (store) => {
      assert.equal(await store.allocateSlot('a', 'h1'), 1);
      assert.equal(await store.allocateSlot('b', 'h1'), 2);
      assert.equal(await store.allocateSlot('a', 'h1'), 1);
      assert.equal(await store.allocateSlot('c', 'h1'), 3);
      await assert.rejects(store.allocateSlot('d', 'h1'), { code: 'RUNTIME_UNAVAILABLE' });
      await store.releaseSlot('b');
      await store.releaseSlot('nobody');
      assert.equal(await store.allocateSlot('d', 'h1'), 2);
      assert.deepEqual(await store.listSlots('h1'), [
        { hostId: 'h1', slot: 1, sandboxId: 'a' },
        { hostId: 'h1', slot: 2, sandboxId: 'd' },
        { hostId: 'h1', slot: 3, sandboxId: 'c' },
      ]);
    }, { maxSlots: 3 });
    await withStore(h, 'slots_race', async (store) => {
      const slots = await Promise.all(Array.from({ length: 12 }, (_, i) => store.allocateSlot(`race_${i}`, 'h1')));
      assert.deepEqual([...slots].sort((x, y) => x - y), Array.from({ length: 12 }, (_, i) => i + 1));
    });
  });

  test('slots are keyed by host: each host numbers its own from 1; a lease moves with its sandbox', async () => {
    await withStore(h, 'slots_hosts', async (store) => {
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
    }, { maxSlots: 2 });
  });

  test('host ids: recorded on sandboxes and snapshots, filter listings, and rows without one are adopted once', async () => {
    await withStore(h, 'host_ids', async (store) => {
      const mine = sandbox({ hostId: 'h1' });
      const theirs = sandbox({ hostId: 'h2' });
      const old = sandbox({ hostId: null, slot: 1 });
      for (const s of [mine, theirs, old]) await store.insertSandbox(s);
      await store.insertSnapshot(snapshot({ id: 'snap_h2', hostId: 'h2' }));
      await store.insertSnapshot(snapshot({ id: 'snap_old', hostId: null }));
      const ids = async (hostId: string): Promise<string[]> => (await store.listSandboxes({ hostId })).sandboxes.map((s) => s.id);
      assert.deepEqual(await ids('h1'), [mine.id]);
      assert.deepEqual(await store.adoptUnhostedRows('h1'), { sandboxes: 1, snapshots: 1, slots: 0 });
      assert.deepEqual(await ids('h1'), [mine.id, old.id]);
      assert.deepEqual(await ids('h2'), [theirs.id]);
      assert.equal((await store.getSnapshot('snap_old'))?.hostId, 'h1');
      assert.equal((await store.getSnapshot('snap_h2'))?.hostId, 'h2');
      assert.deepEqual(await store.adoptUnhostedRows('h2'), { sandboxes: 0, snapshots: 0, slots: 0 }, 'adopted rows are not adopted again');
      assert.equal((await store.updateSandbox(old.id, { hostId: 'h2' })).hostId, 'h2', 'a resume elsewhere moves it');
    });
  });

  test('SSH keys: kept across a reopen, unique by fingerprint within a team, deleted once and only by their team', async () => {
    await withStore(h, 'ssh_keys', async (store) => {
      await store.insertTeam(team('acme'));
      await store.insertSshKey(sshKey('sshk_a', 'SHA256:a'));
      await assert.rejects(store.insertSshKey(sshKey('sshk_b', 'SHA256:a')), (err: { code?: string; details?: { id?: string } }) => err.code === 'SSH_KEY_EXISTS' && err.details?.id === 'sshk_a');
      await store.insertSshKey(sshKey('sshk_c', 'SHA256:c'));
      await store.insertSshKey(sshKey('sshk_d', 'SHA256:a', 'acme'));
    });
    await withStore(h, 'ssh_keys', async (store) => {
      assert.deepEqual((await store.listSshKeys()).map((k) => k.id), ['sshk_a', 'sshk_c', 'sshk_d']);
      assert.deepEqual((await store.listSshKeys('acme')).map((k) => k.id), ['sshk_d']);
      assert.deepEqual(await store.findSshKeyByFingerprint('SHA256:c', 'default'), sshKey('sshk_c', 'SHA256:c'));
      assert.equal((await store.findSshKeyByFingerprint('SHA256:a', 'acme'))?.id, 'sshk_d', "each team's own key of the same fingerprint");
      assert.equal(await store.findSshKeyByFingerprint('SHA256:c', 'acme'), null);
      assert.equal(await store.deleteSshKey('sshk_a', 'acme'), false, "another team's key is not deleted");
      assert.equal(await store.deleteSshKey('sshk_a', 'default'), true);
      assert.equal(await store.deleteSshKey('sshk_a', 'default'), false);
    });
  });

  test('SSH tokens: one sandbox each, expired ones dropped by the next insert, an unknown sandbox refused, one revoked', async () => {
    await withStore(h, 'ssh_tokens', async (store) => {
      await store.insertSandbox(sandbox({ id: 'sbx_a' }));
      await store.insertSshToken({ hash: 'h1', sandboxId: 'sbx_a', ownerApiKeyId: null, createdAt: 10, expiresAt: 20 });
      await store.insertSshToken({ hash: 'h2', sandboxId: 'sbx_a', ownerApiKeyId: 'key_1', createdAt: 15, expiresAt: 100 });
      assert.equal((await store.findSshToken('h1'))?.expiresAt, 20, 'not expired at 15: kept');
      await store.insertSshToken({ hash: 'h3', sandboxId: 'sbx_a', ownerApiKeyId: null, createdAt: 30, expiresAt: 100 });
      assert.equal(await store.findSshToken('h1'), null, 'expired at 30: dropped');
      assert.deepEqual(await store.findSshToken('h2'), { hash: 'h2', sandboxId: 'sbx_a', ownerApiKeyId: 'key_1', createdAt: 15, expiresAt: 100 });
      await assert.rejects(store.insertSshToken({ hash: 'h4', sandboxId: 'sbx_missing', ownerApiKeyId: null, createdAt: 30, expiresAt: 100 }), { code: 'SANDBOX_NOT_FOUND' });
      assert.equal((await store.findSshToken('h3'))?.sandboxId, 'sbx_a', 'the refused insert dropped nothing');
      assert.equal(await store.deleteSshToken('h3'), true, 'revoked');
      assert.equal(await store.deleteSshToken('h3'), false);
      assert.equal(await store.findSshToken('h3'), null);
      assert.equal((await store.findSshToken('h2'))?.hash, 'h2', 'only that one');
    });
  });

  test('access tokens: insert-or-keep (concurrent callers get one token), kept across reopen, an unknown sandbox refused', async () => {
    await withStore(h, 'access_tokens', async (store) => {
      await store.insertSandbox(sandbox({ id: 'sbx_t' }));
      assert.equal(await store.getAccessToken('sbx_t'), null);
      const got = await Promise.all(['rit_1', 'rit_2', 'rit_3'].map((t, i) => store.ensureAccessToken('sbx_t', t, i)));
      assert.equal(new Set(got).size, 1);
      assert.equal(await store.ensureAccessToken('sbx_t', 'rit_later', 9), got[0], 'insert-or-keep');
      await assert.rejects(store.ensureAccessToken('sbx_missing', 'rit_x', 1), { code: 'SANDBOX_NOT_FOUND' });
    });
    await withStore(h, 'access_tokens', async (store) => {
      assert.match((await store.getAccessToken('sbx_t')) ?? '', /^rit_[123]$/);
    });
  });

  test('egress policies: put replaces the whole policy, rules in order; delete forgets it; an unknown sandbox refused', async () => {
    await withStore(h, 'egress_policies', async (store) => {
      await store.insertSandbox(sandbox({ id: 'sbx_e' }));
      assert.equal(await store.getEgressPolicy('sbx_e'), null);
      assert.deepEqual(await store.putEgressPolicy('sbx_e', { mode: 'allowlist', rules: ['b.test:443', 'a.test'] }, 5), { sandboxId: 'sbx_e', mode: 'allowlist', rules: ['b.test:443', 'a.test'], updatedAt: 5 });
      assert.deepEqual(await store.getEgressPolicy('sbx_e'), { sandboxId: 'sbx_e', mode: 'allowlist', rules: ['b.test:443', 'a.test'], updatedAt: 5 });
      await store.putEgressPolicy('sbx_e', { mode: 'deny-all', rules: [] }, 6);
      assert.deepEqual(await store.getEgressPolicy('sbx_e'), { sandboxId: 'sbx_e', mode: 'deny-all', rules: [], updatedAt: 6 });
      await assert.rejects(store.putEgressPolicy('sbx_e', { mode: 'allowlist', rules: [] }, 7), 'a mode that does not fit the rules is refused');
      assert.equal((await store.getEgressPolicy('sbx_e'))?.mode, 'deny-all');
      await assert.rejects(store.putEgressPolicy('sbx_missing', { mode: 'open', rules: [] }, 1), { code: 'SANDBOX_NOT_FOUND' });
      await store.deleteEgressPolicy('sbx_e');
      await store.deleteEgressPolicy('sbx_e');
      assert.equal(await store.getEgressPolicy('sbx_e'), null);
    });
  });
}
