/**
 * Audit of forwarded calls: an API-role app and a host-role app (in-process Fastify, real HTTP on loopback,
 * one real SQLite store, core's fake runtime) — each call through the API is audited once, by the API, with
 * the host's outcome; a call made on the host directly, or with a forged signature, is audited by the host.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createApiKey, type AuditRecord } from '@ramify/core';
import { createTestWorld, type TestWorld } from '@ramify/core/testing';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../app.js';
import { AUDIT_ERROR_HEADER, AUDIT_SANDBOX_HEADER, FORWARDED_HEADER, isSignedForward, signForwarded } from './forward-audit.js';

let world: TestWorld;
let hostApp: FastifyInstance;
let apiApp: FastifyInstance;
let key = '';
let keyId = '';
const urls = { api: '', host: '' };

before(async () => {
  world = await createTestWorld();
  ({ key, record: { id: keyId } } = await createApiKey(world.store, world.clock, 'test'));
  hostApp = await buildApp({ core: world.core, role: 'host' });
  urls.host = await hostApp.listen({ host: '127.0.0.1', port: 0 });
  await world.core.store.registerHost({
    id: world.core.hostId, url: urls.host, capacity: { memoryMB: 65536, cpus: 64, slots: 64 }, cachedImageIds: [], pendingUploadIds: [], hostNowMs: Date.now(), leaseMs: 600_000, maxClockSkewMs: 2000,
  });
  apiApp = await buildApp({ core: { ...world.core, hostId: 'api-1' }, role: 'api' });
  urls.api = await apiApp.listen({ host: '127.0.0.1', port: 0 });
});
after(async () => {
  await apiApp.close();
  await hostApp.close();
  await world.dispose();
});

const call = async (base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });

/** The audit entries of `action` once they are written (both processes write theirs after answering). */
async function entries(action: string, count: number): Promise<AuditRecord[]> {
  const of = async (): Promise<AuditRecord[]> => (await world.store.listAudit({ limit: 1000 })).filter((e) => e.action === action);
  for (const deadline = Date.now() + 5000; (await of()).length < count && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 20));
  // Long enough for a second, wrong entry to appear.
  await new Promise((r) => setTimeout(r, 150));
  return of();
}

test('a signature is valid for its method and url only, and only for a minute', () => {
  const header = signForwarded('s3cret', 'POST', '/v1/sandboxes/x/pause', 1_000_000);
  assert.equal(isSignedForward('s3cret', header, 'POST', '/v1/sandboxes/x/pause', 1_030_000), true);
  assert.equal(isSignedForward('s3cret', header, 'POST', '/v1/sandboxes/y/pause', 1_000_000), false);
  assert.equal(isSignedForward('s3cret', header, 'DELETE', '/v1/sandboxes/x/pause', 1_000_000), false);
  assert.equal(isSignedForward('other', header, 'POST', '/v1/sandboxes/x/pause', 1_000_000), false);
  assert.equal(isSignedForward('s3cret', header, 'POST', '/v1/sandboxes/x/pause', 1_061_000), false);
  assert.equal(isSignedForward('s3cret', 'garbage', 'POST', '/v1/sandboxes/x/pause', 1_000_000), false);
});

test('calls through the API are audited once, by the API, with the host\'s outcome; the audit headers do not reach the caller', async () => {
  const created = await call(urls.api, 'POST', '/v1/sandboxes', {});
  assert.equal(created.status, 201);
  assert.equal(created.headers.get(AUDIT_SANDBOX_HEADER), null);
  const id = ((await created.json()) as { id: string }).id;
  const [create, ...moreCreates] = await entries('sandbox.create', 1);
  assert.deepEqual(moreCreates, [], 'one entry');
  assert.deepEqual([create?.status, create?.sandboxId, create?.apiKeyId, create?.teamId, create?.errorCode], [201, id, keyId, 'default', null]);

  const refused = await call(urls.api, 'POST', `/v1/sandboxes/${id}/timeout`, { timeoutMs: -1 });
  assert.equal(refused.status, 400);
  assert.equal(refused.headers.get(AUDIT_ERROR_HEADER), null);
  const timeouts = await entries('sandbox.timeout', 1);
  assert.deepEqual(timeouts.map((e) => [e.status, e.errorCode, e.sandboxId, e.path]), [[400, 'VALIDATION_FAILED', id, `/v1/sandboxes/${id}/timeout`]]);

  // A client's own forged header is dropped by the API and replaced by its signature: still one entry.
  const paused = await call(urls.api, 'POST', `/v1/sandboxes/${id}/pause`, undefined, { [FORWARDED_HEADER]: `${Date.now()}.${'0'.repeat(64)}` });
  assert.equal(paused.status, 200);
  assert.deepEqual((await entries('sandbox.pause', 1)).map((e) => [e.status, e.sandboxId]), [[200, id]]);
});

test('a call made on a host directly, signed or not by a forger, is audited there', async () => {
  const id = ((await (await call(urls.api, 'POST', '/v1/sandboxes', {})).json()) as { id: string }).id;
  const direct = await call(urls.host, 'POST', `/v1/sandboxes/${id}/timeout`, { timeoutMs: 60_000 });
  assert.equal(direct.status, 200);
  const forged = await call(urls.host, 'POST', `/v1/sandboxes/${id}/timeout`, { timeoutMs: 70_000 }, { [FORWARDED_HEADER]: signForwarded('not-the-secret', 'POST', `/v1/sandboxes/${id}/timeout`, Date.now()) });
  assert.equal(forged.status, 200);
  assert.equal(forged.headers.get(AUDIT_SANDBOX_HEADER), null, 'no audit headers for an unsigned call');
  const mine = (await entries('sandbox.timeout', 3)).filter((e) => e.sandboxId === id);
  assert.deepEqual(mine.map((e) => [e.status, e.apiKeyId]), [[200, keyId], [200, keyId]]);
});

test("a JSON body sent through the API as text/plain (fetch's default) is refused there on its Content-Type, as on a host", async () => {
  const id = ((await (await call(urls.api, 'POST', '/v1/sandboxes', {})).json()) as { id: string }).id;
  for (const [path, body] of [['/v1/sandboxes', '{"memoryMB":512}'], [`/v1/sandboxes/${id}/fork`, '{"count":1}']] as const) {
    const res = await fetch(`${urls.api}${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body });
    const { error } = (await res.json()) as { error: { code: string; message: string } };
    assert.deepEqual([res.status, error.code, error.message], [400, 'VALIDATION_FAILED', "headers.content-type: must be application/json to send a JSON body, got 'text/plain;charset=UTF-8'"], path);
  }
});

test('a call the API could not deliver (the host did not answer) is audited by the API: 503 RUNTIME_UNAVAILABLE', async () => {
  const id = ((await (await call(urls.api, 'POST', '/v1/sandboxes', {})).json()) as { id: string }).id;
  const record = (await world.store.getSandbox(id))!;
  await world.core.store.registerHost({
    id: 'host-dead', url: 'http://127.0.0.1:9', capacity: { memoryMB: 1024, cpus: 4, slots: 4 }, cachedImageIds: [], pendingUploadIds: [], hostNowMs: Date.now(), leaseMs: 600_000, maxClockSkewMs: 2000,
  });
  await world.store.insertSandbox({ ...record, id: 'sbx_on_dead_host', hostId: 'host-dead', slot: null });
  const reply = await call(urls.api, 'DELETE', '/v1/sandboxes/sbx_on_dead_host');
  assert.equal(reply.status, 503);
  const kills = (await entries('sandbox.kill', 1)).filter((e) => e.sandboxId === 'sbx_on_dead_host');
  assert.deepEqual(kills.map((e) => [e.status, e.errorCode]), [[503, 'RUNTIME_UNAVAILABLE']]);
});
