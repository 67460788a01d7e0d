/**
 * HTTP-edge tests of the SSH routes, in-process with `app.inject` over a core wired to core's FAKE
 * runtime (validation, auth, error mapping, audit, OpenAPI; the gateway itself is real-ssh.test.ts's).
 */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateEd25519Key } from './ssh/keys.js';
import { createViaApi, httpTestBed, type HttpTestBed } from './test-support.js';

let bed: HttpTestBed;
beforeEach(async () => {
  bed = await httpTestBed();
});
afterEach(async () => {
  await bed.dispose();
});

/** A fresh ed25519 public key line, as a `.pub` file holds it. */
function publicKeyLine(comment: string): string {
  return generateEd25519Key(comment).public.trim();
}

test('ssh-keys: add (owner recorded, audited), list, 409 for the same key, 400 for a malformed one, delete, 404', async () => {
  const line = publicKeyLine('me@laptop');
  const added = await bed.app.inject({ method: 'POST', url: '/v1/ssh-keys', headers: bed.auth, payload: { publicKey: `${line}\n` } });
  assert.equal(added.statusCode, 201, added.body);
  const key = added.json();
  assert.equal(key.name, 'me@laptop');
  assert.equal(key.publicKey, line.split(' ').slice(0, 2).join(' '));
  assert.match(key.ownerApiKeyId, /^key_/);
  const again = await bed.app.inject({ method: 'POST', url: '/v1/ssh-keys', headers: bed.auth, payload: { publicKey: line, name: 'twice' } });
  assert.equal(again.statusCode, 409);
  assert.equal(again.json().error.code, 'SSH_KEY_EXISTS');
  assert.equal(again.json().error.details.id, key.id);
  for (const publicKey of ['ssh-ed25519 AAAA', '-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----', `${line}\n${line}`]) {
    const bad = await bed.app.inject({ method: 'POST', url: '/v1/ssh-keys', headers: bed.auth, payload: { publicKey } });
    assert.equal(bad.statusCode, 400, publicKey);
    assert.equal(bad.json().error.code, 'SSH_KEY_INVALID');
  }
  const unknownField = await bed.app.inject({ method: 'POST', url: '/v1/ssh-keys', headers: bed.auth, payload: { publicKey: line, owner: 'x' } });
  assert.equal(unknownField.json().error.code, 'VALIDATION_FAILED');
  const listed = await bed.app.inject({ method: 'GET', url: '/v1/ssh-keys', headers: bed.auth });
  assert.deepEqual(listed.json().keys.map((k: { id: string }) => k.id), [key.id]);
  assert.equal((await bed.app.inject({ method: 'DELETE', url: `/v1/ssh-keys/${key.id}`, headers: bed.auth })).statusCode, 204);
  const gone = await bed.app.inject({ method: 'DELETE', url: `/v1/ssh-keys/${key.id}`, headers: bed.auth });
  assert.equal(gone.statusCode, 404);
  assert.equal(gone.json().error.code, 'SSH_KEY_NOT_FOUND');
  const audit = (await bed.app.inject({ method: 'GET', url: '/v1/audit', headers: bed.auth })).json().entries.map((e: { action: string; status: number }) => `${e.action} ${e.status}`);
  assert.ok(audit.includes('ssh-key.add 201') && audit.includes('ssh-key.remove 204'), audit.join(', '));
});

test('ssh-access: 503 without a gateway; a token and a ready command with one; the token is never audited', async () => {
  const { id } = await createViaApi(bed);
  const none = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/ssh-access`, headers: bed.auth });
  assert.equal(none.statusCode, 503);
  assert.equal(none.json().error.code, 'SSH_UNAVAILABLE');
  bed.world.core.options.ssh = { host: 'ssh.example.com', port: 22 };
  const granted = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/ssh-access`, headers: bed.auth, payload: { ttlMs: 600_000 } });
  assert.equal(granted.statusCode, 201, granted.body);
  const access = granted.json();
  assert.equal(access.command, `ssh ${id}+${access.token}@ssh.example.com`, 'port 22 needs no -p');
  assert.equal(Date.parse(access.expiresAt), bed.world.clock.now() + 600_000);
  const short = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/ssh-access`, headers: bed.auth, payload: { ttlMs: 1000 } });
  assert.equal(short.json().error.code, 'VALIDATION_FAILED');
  const missing = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes/sbx_nope/ssh-access', headers: bed.auth });
  assert.equal(missing.json().error.code, 'SANDBOX_NOT_FOUND');
  const audit = (await bed.app.inject({ method: 'GET', url: '/v1/audit', headers: bed.auth })).body;
  assert.ok(audit.includes('sandbox.ssh-access') && !audit.includes(access.token));
});

test('the SSH routes need an API key and are in the OpenAPI document', async () => {
  for (const [method, url] of [['GET', '/v1/ssh-keys'], ['POST', '/v1/ssh-keys'], ['DELETE', '/v1/ssh-keys/sshk_x'], ['POST', '/v1/sandboxes/sbx_x/ssh-access']] as const) {
    const denied = await bed.app.inject({ method, url, payload: {} });
    assert.equal(denied.statusCode, 401, url);
  }
  const doc = (await bed.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
  assert.ok(doc.paths['/v1/ssh-keys'].post && doc.paths['/v1/ssh-keys'].get && doc.paths['/v1/ssh-keys/{keyId}'].delete && doc.paths['/v1/sandboxes/{id}/ssh-access'].post);
  assert.ok(doc.components.schemas.Error.properties.error.properties.code.enum.includes('SSH_KEY_INVALID'));
});
