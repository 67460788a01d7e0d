import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from './sqlite-store.js';

let dir: string;
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-store-ssh-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const sandbox = (id: string) => ({
  id, teamId: 'default', state: 'running' as const, runtime: 'gvisor' as const, templateId: 'tpl_1', sourceSnapshotId: 'snap_tpl', rootfsDir: '/r', parentId: null,
  cpuCount: 1, memoryMB: 512, diskSizeMB: null, metadata: {}, envs: {}, createdAt: 1, timeoutMs: 300_000, onTimeout: 'pause' as const,
  endAt: null, slot: null, pausedSnapshotId: null, error: null, operation: null, ingress: { ports: [], autoResume: null }, autoPause: null, lastActiveAt: null, hostId: null,
});

const key = (id: string, fingerprint: string, teamId = 'default') => ({ id, teamId, ownerApiKeyId: 'key_1', name: id, type: 'ssh-ed25519', fingerprint, publicKey: `ssh-ed25519 ${id}`, createdAt: 1 });

test('SSH keys: stored across a reopen, unique by fingerprint within a team, deleted once and only by their team', async () => {
  const path = join(dir, 'keys.db');
  const store = new SqliteStore({ path });
  await store.insertTeam({ id: 'acme', createdAt: 1, quota: { maxRunning: null, maxMemoryMB: null, maxForksPerCall: null } });
  await store.insertSshKey(key('sshk_a', 'SHA256:a'));
  await assert.rejects(store.insertSshKey(key('sshk_b', 'SHA256:a')), (err: { code?: string; details?: { id?: string } }) => err.code === 'SSH_KEY_EXISTS' && err.details?.id === 'sshk_a');
  await store.insertSshKey(key('sshk_c', 'SHA256:c'));
  await store.insertSshKey(key('sshk_d', 'SHA256:a', 'acme'));
  await store.close();
  const reopened = new SqliteStore({ path });
  assert.deepEqual((await reopened.listSshKeys()).map((k) => k.id), ['sshk_a', 'sshk_c', 'sshk_d']);
  assert.deepEqual((await reopened.listSshKeys('acme')).map((k) => k.id), ['sshk_d']);
  assert.equal((await reopened.findSshKeyByFingerprint('SHA256:c', 'default'))?.ownerApiKeyId, 'key_1');
  assert.equal((await reopened.findSshKeyByFingerprint('SHA256:a', 'acme'))?.id, 'sshk_d', "each team's own key of the same fingerprint");
  assert.equal(await reopened.findSshKeyByFingerprint('SHA256:c', 'acme'), null);
  assert.equal(await reopened.deleteSshKey('sshk_a', 'acme'), false, "another team's key is not deleted");
  assert.equal(await reopened.deleteSshKey('sshk_a', 'default'), true);
  assert.equal(await reopened.deleteSshKey('sshk_a', 'default'), false);
  assert.equal(await reopened.findSshKeyByFingerprint('SHA256:a', 'default'), null);
  await reopened.close();
});

test('SSH tokens: one sandbox each, expired ones dropped by the next insert, all gone with a kill', async () => {
  const store = new SqliteStore({ path: join(dir, 'tokens.db') });
  await store.insertSandbox(sandbox('sbx_a'));
  await store.insertSshToken({ hash: 'h1', sandboxId: 'sbx_a', ownerApiKeyId: null, createdAt: 10, expiresAt: 20 });
  await store.insertSshToken({ hash: 'h2', sandboxId: 'sbx_a', ownerApiKeyId: 'key_1', createdAt: 15, expiresAt: 100 });
  assert.equal((await store.findSshToken('h1'))?.expiresAt, 20, 'not expired at 15: kept');
  await store.insertSshToken({ hash: 'h3', sandboxId: 'sbx_a', ownerApiKeyId: null, createdAt: 30, expiresAt: 100 });
  assert.equal(await store.findSshToken('h1'), null, 'expired at 30: dropped');
  assert.equal((await store.findSshToken('h2'))?.sandboxId, 'sbx_a');
  await assert.rejects(store.insertSshToken({ hash: 'h4', sandboxId: 'sbx_missing', ownerApiKeyId: null, createdAt: 30, expiresAt: 100 }), { code: 'SANDBOX_NOT_FOUND' });
  await store.updateSandbox('sbx_a', { state: 'killed' });
  assert.equal(await store.findSshToken('h2'), null);
  assert.equal(await store.findSshToken('h3'), null);
  await store.close();
});
