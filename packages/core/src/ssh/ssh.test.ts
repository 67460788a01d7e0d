/**
 * The SSH domain in core: user names, registered keys (stored before acknowledged, unique), tokens
 * (hashed, one sandbox, expiring, gone with a kill) and waking a paused sandbox for a connection whatever
 * its autoResume. FAKE runtime, network and agent (core logic only) and a real SQLite store.
 */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from '../lifecycle/create.js';
import { killSandbox } from '../lifecycle/kill.js';
import { pauseSandbox } from '../lifecycle/pause.js';
import { wakeForIngress, wakeForSsh } from '../ingress/ingress-target.js';
import { grantSshAccess, hashSshToken, revokeSshToken } from './access.js';
import { parseSshUser, sshKeyOpens, sshTokenOpens } from './authorize.js';
import { addSshKey, listSshKeys, removeSshKey, toSshKeyInfo } from './keys.js';

const ENDPOINT = { host: '127.0.0.1', port: 2222 };
const KEY = { type: 'ssh-ed25519', fingerprint: 'SHA256:abc', publicKey: 'ssh-ed25519 AAAA', comment: 'me@laptop' };
let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld({ ssh: ENDPOINT });
});
afterEach(async () => {
  await w.dispose();
});

test('user names: the sandbox id (any case, _ or -), optionally + a token (+ a reservation)', () => {
  const id = 'sbx_01M8K8X452ADP02FS1JK0BWJKD';
  assert.deepEqual(parseSshUser(id), { sandboxId: id, token: null, reservationId: null });
  assert.deepEqual(parseSshUser('sbx-01m8k8x452adp02fs1jk0bwjkd+rst_x'), { sandboxId: id, token: 'rst_x', reservationId: null });
  assert.deepEqual(parseSshUser(`${id}+rst_x+rsv_0a1b`), { sandboxId: id, token: 'rst_x', reservationId: 'rsv_0a1b' }, "the API relay's placement");
  for (const bad of ['root', 'sbx_short', `${id}x`, '', `snap_${id.slice(4)}`]) assert.equal(parseSshUser(bad), null, bad);
});

test('keys: named by their comment, unique, listed, removed; a key opens live sandboxes only', async () => {
  const s = await createSandbox(w.core, {});
  const key = await addSshKey(w.core, { key: KEY, ownerApiKeyId: 'key_1' });
  assert.equal(toSshKeyInfo(key).name, 'me@laptop');
  assert.equal(toSshKeyInfo(key).ownerApiKeyId, 'key_1');
  await assert.rejects(addSshKey(w.core, { key: KEY, name: 'again', ownerApiKeyId: null }), { code: 'SSH_KEY_EXISTS' });
  assert.deepEqual((await listSshKeys(w.core)).map((k) => k.id), [key.id]);
  assert.equal((await sshKeyOpens(w.core, s.id, KEY.fingerprint))?.id, key.id);
  assert.equal(await sshKeyOpens(w.core, s.id, 'SHA256:other'), null);
  assert.equal(await sshKeyOpens(w.core, 'sbx_01M8K8X452ADP02FS1JK0BWJKD', KEY.fingerprint), null, 'unknown sandbox');
  await killSandbox(w.core, s.id);
  assert.equal(await sshKeyOpens(w.core, s.id, KEY.fingerprint), null, 'killed sandbox');
  await removeSshKey(w.core, key.id);
  await assert.rejects(removeSshKey(w.core, key.id), { code: 'SSH_KEY_NOT_FOUND' });
});

test('tokens: stored hashed, open their own sandbox until they expire, gone with a kill', async () => {
  const a = await createSandbox(w.core, {});
  const b = await createSandbox(w.core, {});
  const access = await grantSshAccess(w.core, a.id, { ttlMs: 60_000, ownerApiKeyId: 'key_1' });
  assert.match(access.token, /^rst_[A-Za-z0-9_-]{43}$/);
  assert.equal(access.user, `${a.id}+${access.token}`);
  assert.equal(access.command, `ssh -p 2222 ${a.id}+${access.token}@127.0.0.1`);
  assert.equal(Date.parse(access.expiresAt), w.clock.now() + 60_000);
  const stored = await w.core.store.findSshToken(hashSshToken(access.token));
  assert.equal(stored?.sandboxId, a.id, 'only the hash is the key of the stored row');
  assert.equal(await sshTokenOpens(w.core, a.id, access.token), true);
  assert.equal(await sshTokenOpens(w.core, b.id, access.token), false, "another sandbox's token");
  assert.equal(await sshTokenOpens(w.core, a.id, `${access.token.slice(0, -1)}${access.token.endsWith('A') ? 'B' : 'A'}`), false);
  assert.equal(await sshTokenOpens(w.core, a.id, 'not-a-token'), false);
  w.clock.advance(60_000);
  assert.equal(await sshTokenOpens(w.core, a.id, access.token), false, 'expired');
  const again = await grantSshAccess(w.core, a.id, { ownerApiKeyId: null });
  assert.equal(Date.parse(again.expiresAt), w.clock.now() + 3_600_000, 'default 1 h');
  assert.equal(await w.core.store.findSshToken(hashSshToken(access.token)), null, 'the expired row went with the next grant');
  await killSandbox(w.core, a.id);
  assert.equal(await sshTokenOpens(w.core, a.id, again.token), false);
  await assert.rejects(grantSshAccess(w.core, a.id, { ownerApiKeyId: null }), { code: 'SANDBOX_NOT_FOUND' });
});

test('a token revoked opens nothing from then on', async () => {
  const s = await createSandbox(w.core, {});
  const access = await grantSshAccess(w.core, s.id, { ttlMs: 60_000, ownerApiKeyId: null });
  assert.equal(await revokeSshToken(w.core, access.token), true);
  assert.equal(await sshTokenOpens(w.core, s.id, access.token), false);
  assert.equal(await revokeSshToken(w.core, access.token), false);
});

test('no gateway, no access', async () => {
  const s = await createSandbox(w.core, {});
  w.core.options.ssh = null;
  await assert.rejects(grantSshAccess(w.core, s.id, { ownerApiKeyId: null }), { code: 'SSH_UNAVAILABLE' });
});

test('an SSH connection wakes a paused sandbox even with autoResume off, without counting an ingress wake', async () => {
  const s = await createSandbox(w.core, {});
  await pauseSandbox(w.core, s.id);
  await assert.rejects(wakeForIngress(w.core, s.id, 30_000), { code: 'SANDBOX_PAUSED' }, 'no port exposed: the ingress does not wake it');
  const { record, woke } = await wakeForSsh(w.core, s.id, 30_000);
  assert.equal(record.state, 'running');
  assert.equal(woke, true);
  assert.equal((await w.core.store.getIngressWakes(s.id)).count, 0);
});
