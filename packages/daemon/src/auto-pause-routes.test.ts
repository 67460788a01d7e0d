/**
 * The auto-pause and ingress-log routes in-process (`app.inject`) over core's FAKE runtime: both need the
 * API key (401 without, a wrong one 401), bad values are 400 and store nothing, the setting is live and
 * shown in SandboxInfo, the log answers newest first with the wake count, and an API request naming a
 * sandbox counts as use of it (held while it runs). Documented in the OpenAPI document.
 */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { httpTestBed, type HttpTestBed } from './test-support.js';

let bed: HttpTestBed;
beforeEach(async () => {
  bed = await httpTestBed();
});
afterEach(async () => {
  await bed.dispose();
});

test('PUT auto-pause and GET ingress/log: closed without the key, validated, live', async () => {
  const created = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: bed.auth, payload: { autoPause: { idleMs: 600_000 } } });
  assert.equal(created.statusCode, 201, created.body);
  const { id, autoPause } = created.json();
  assert.deepEqual(autoPause, { idleMs: 600_000 });
  for (const [method, url, payload] of [['PUT', `/v1/sandboxes/${id}/auto-pause`, { autoPause: null }], ['GET', `/v1/sandboxes/${id}/ingress/log`, undefined]] as const) {
    for (const headers of [{}, { authorization: 'Bearer rmf_nope' }]) {
      const res = await bed.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
      assert.equal(res.statusCode, 401, `${method} ${url} without a valid key`);
    }
  }
  assert.deepEqual((await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}`, headers: bed.auth })).json().autoPause, { idleMs: 600_000 }, 'nothing changed without the key');
  for (const body of [{ autoPause: { idleMs: 5 } }, { autoPause: { idleMs: '10m' } }, { autoPause: { idleMs: 60_000, cpu: 1 } }, {}]) {
    const res = await bed.app.inject({ method: 'PUT', url: `/v1/sandboxes/${id}/auto-pause`, headers: bed.auth, payload: body });
    assert.equal(res.statusCode, 400, JSON.stringify(body));
    assert.equal(res.json().error.code, 'VALIDATION_FAILED');
  }
  assert.equal((await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: bed.auth, payload: { autoPause: { idleMs: 0 } } })).statusCode, 400);
  const set = await bed.app.inject({ method: 'PUT', url: `/v1/sandboxes/${id}/auto-pause`, headers: bed.auth, payload: { autoPause: { idleMs: 60_000 } } });
  assert.equal(set.statusCode, 200, set.body);
  assert.deepEqual(set.json().autoPause, { idleMs: 60_000 });
  const off = await bed.app.inject({ method: 'PUT', url: `/v1/sandboxes/${id}/auto-pause`, headers: bed.auth, payload: { autoPause: null } });
  assert.equal(off.json().autoPause, null);
  bed.world.core.ingressLog.record({ sandboxId: id, at: 1, client: '127.0.0.1', method: 'GET', path: '/a', port: 8000, status: 200, bytes: 3, durationMs: 1, woke: false });
  const log = await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}/ingress/log?limit=5`, headers: bed.auth });
  assert.equal(log.statusCode, 200, log.body);
  assert.deepEqual(log.json(), { entries: [{ at: new Date(1).toISOString(), client: '127.0.0.1', method: 'GET', path: '/a', port: 8000, status: 200, bytes: 3, durationMs: 1, woke: false }], wakeups: 0, lastWakeAt: null });
  assert.equal((await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}/ingress/log?limit=0`, headers: bed.auth })).statusCode, 400);
  assert.equal((await bed.app.inject({ method: 'GET', url: '/v1/sandboxes/sbx_00000000000000000000000000/ingress/log', headers: bed.auth })).statusCode, 404);
  const doc = (await bed.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
  assert.ok(doc.paths['/v1/sandboxes/{id}/auto-pause'].put, 'auto-pause documented');
  assert.ok(doc.paths['/v1/sandboxes/{id}/ingress/log'].get, 'ingress log documented');
});

test('an API request naming a sandbox is use of it: touched, and held while it runs', async () => {
  const { id } = (await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: bed.auth, payload: {} })).json();
  bed.world.clock.advance(50_000);
  assert.equal(bed.world.core.activity.idleMs(id), 50_000);
  await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}`, headers: bed.auth });
  assert.equal(bed.world.core.activity.idleMs(id), 0, 'the GET just touched it');
  assert.equal(bed.world.core.activity.openCount(id), 0, 'released once answered');
});
