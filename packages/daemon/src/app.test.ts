/**
 * HTTP-edge tests, in-process with `app.inject`, over a core wired to core's FAKE runtime (validation,
 * auth, error mapping, audit, routing; NOT runtime coverage).
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { API_PREFIX } from '@ramify/contracts';
import { httpTestBed, type HttpTestBed } from './test-support.js';

let bed: HttpTestBed;
beforeEach(async () => {
  bed = await httpTestBed();
});
afterEach(async () => {
  await bed.dispose();
});

async function create(body: Record<string, unknown> = {}): Promise<{ id: string; state: string }> {
  const res = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: bed.auth, payload: body });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

describe('HTTP edge with the fake runtime: auth, health, OpenAPI', () => {
  test('health and the OpenAPI document need no key; everything else does', async () => {
    const health = await bed.app.inject({ method: 'GET', url: '/v1/health' });
    assert.equal(health.statusCode, 200);
    assert.deepEqual({ ...(health.json() as object), version: 'x' }, {
      ok: true, version: 'x', runtimes: ['gvisor'], runtimeInfo: { gvisor: 'gvisor' }, unavailableRuntimes: {},
      pool: { mode: 'off', budgetMB: 2048, hits: 0, misses: { empty: 0, resources: 0 }, idle: 0, filling: 0, memoryMB: 0, runtimes: {} },
    });
    const doc = (await bed.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    assert.equal(doc.openapi, '3.1.0');
    for (const path of ['/v1/sandboxes', '/v1/sandboxes/{id}/fork', '/v1/sandboxes/{id}/processes/{pid}/wait', '/v1/sandboxes/{id}/files', '/v1/audit', '/v1/sandboxes/{id}/commands/stream']) {
      assert.ok(doc.paths[path], `${path} documented`);
    }
    assert.equal(doc.paths['/v1/sandboxes'].post.requestBody.content['application/json'].schema.additionalProperties, false);
    const run = doc.paths['/v1/sandboxes/{id}/commands'].post;
    assert.match(run.description, /maxOutputBytes.*32 MiB/);
    const result = run.responses['200'].content['application/json'].schema.anyOf[0];
    assert.equal(result.properties.truncated.type, 'boolean');
    assert.match(result.properties.truncated.description, /cut/);
    assert.deepEqual(Object.keys(result.properties.capture.properties), ['limitBytes', 'stdout', 'stderr']);
    assert.deepEqual(Object.keys(result.properties.capture.properties.stdout.properties), ['keptBytes', 'totalBytes']);
    assert.match(doc.paths['/v1/sandboxes/{id}/commands/stream'].get.description, /maxOutputBytes/);
    assert.match(doc.paths['/v1/sandboxes/{id}/processes/{pid}/stdin'].post.description, /PROCESS_EXITED/);
    const none = await bed.app.inject({ method: 'GET', url: '/v1/sandboxes' });
    assert.equal(none.statusCode, 401);
    assert.equal(none.json().error.code, 'UNAUTHORIZED');
    const wrong = await bed.app.inject({ method: 'GET', url: '/v1/sandboxes', headers: { authorization: 'Bearer rmf_nope' } });
    assert.equal(wrong.statusCode, 401);
    // The terminal routes are doors into a sandbox too: no key, or a wrong one, gets nothing.
    for (const [url, payload] of [['/v1/sandboxes/sbx_x/pty', { cols: 80, rows: 24 }], ['/v1/sandboxes/sbx_x/processes/1/resize', { cols: 80, rows: 24 }]] as const) {
      for (const headers of [{}, { authorization: 'Bearer rmf_nope' }]) {
        const denied = await bed.app.inject({ method: 'POST', url, payload, headers });
        assert.equal(denied.statusCode, 401, url);
        assert.equal(denied.json().error.code, 'UNAUTHORIZED');
      }
    }
  });

  test('unknown routes are 404 ROUTE_NOT_FOUND', async () => {
    const res = await bed.app.inject({ method: 'GET', url: `${API_PREFIX}/nothing-here`, headers: bed.auth });
    assert.equal(res.statusCode, 404);
    assert.equal(res.json().error.code, 'ROUTE_NOT_FOUND');
  });

  test('a known path asked with another method is 405 METHOD_NOT_ALLOWED naming the methods it takes', async () => {
    const res = await bed.app.inject({ method: 'GET', url: `${API_PREFIX}/templates/base`, headers: bed.auth });
    assert.equal(res.statusCode, 405, res.body);
    assert.equal(res.json().error.code, 'METHOD_NOT_ALLOWED');
    assert.equal(res.json().error.message, `GET is not allowed on ${API_PREFIX}/templates/base: it takes DELETE`);
    assert.deepEqual(res.json().error.details.allowed, ['DELETE']);
    assert.equal(res.headers.allow, 'DELETE');
    // Without a key the answer is the same and names no template: which methods a path takes is in the
    // unauthenticated OpenAPI document already; a real route still asks for the key.
    const anonymous = await bed.app.inject({ method: 'GET', url: `${API_PREFIX}/templates/base` });
    assert.equal(anonymous.statusCode, 405);
    assert.equal((await bed.app.inject({ method: 'DELETE', url: `${API_PREFIX}/templates/base` })).statusCode, 401);
  });

  test('long or broken path segments answer in the API layout, each segment cut', async () => {
    const long = `sbx_${'A'.repeat(196)}`;
    const notFound = await bed.app.inject({ method: 'GET', url: `${API_PREFIX}/sandboxes/${long}`, headers: bed.auth });
    assert.equal(notFound.statusCode, 404, notFound.body);
    assert.equal(notFound.json().error.code, 'SANDBOX_NOT_FOUND');
    assert.equal(notFound.json().error.message, `sandbox '${long.slice(0, 40)}...' not found`, 'the message cuts the id (details.id keeps it whole)');
    const unknown = await bed.app.inject({ method: 'GET', url: `${API_PREFIX}/${long}/x`, headers: bed.auth });
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json().error.message, `no route GET ${API_PREFIX}/${long.slice(0, 40)}.../x`);
    const tooLong = await bed.app.inject({ method: 'GET', url: `${API_PREFIX}/sandboxes/${'A'.repeat(1100)}`, headers: bed.auth });
    assert.equal(tooLong.statusCode, 400, tooLong.body);
    assert.equal(tooLong.json().error.code, 'VALIDATION_FAILED');
    assert.deepEqual(tooLong.json().error.details.issues, [{ path: 'path', message: 'a segment of the path is longer than 1024 characters' }]);
    const badUrl = await bed.app.inject({ method: 'GET', url: `${API_PREFIX}/sandboxes/%E0%A4%A`, headers: bed.auth });
    assert.equal(badUrl.statusCode, 400, badUrl.body);
    assert.equal(badUrl.json().error.code, 'VALIDATION_FAILED');
  });
});

describe('HTTP edge with the fake runtime: validation and error mapping', () => {
  test('unknown fields are 400 VALIDATION_FAILED naming the field; bad values name theirs', async () => {
    const unknown = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: bed.auth, payload: { template: 'base', colour: 'red' } });
    assert.equal(unknown.statusCode, 400);
    assert.equal(unknown.json().error.code, 'VALIDATION_FAILED');
    assert.match(unknown.json().error.message, /unknown field 'colour'/);
    const big = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: bed.auth, payload: { timeoutMs: 10 ** 12 } });
    assert.equal(big.json().error.message, 'body.timeoutMs: must be an integer from 1 to 86400000, got 1000000000000');
    const query = await bed.app.inject({ method: 'GET', url: '/v1/sandboxes?limit=5&colour=red', headers: bed.auth });
    assert.equal(query.statusCode, 400);
    assert.match(query.json().error.message, /query: unknown field 'colour'/);
    const state = await bed.app.inject({ method: 'GET', url: '/v1/sandboxes?state=running,asleep', headers: bed.auth });
    assert.match(state.json().error.message, /asleep/);
    const fork = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${(await create()).id}/fork`, headers: bed.auth, payload: { count: 100 } });
    assert.equal(fork.json().error.message, 'body.count: must be an integer from 1 to 64, got 100');
  });

  test('JSON bodies over 1 MiB are 413 PAYLOAD_TOO_LARGE; malformed JSON is 400 VALIDATION_FAILED on body', async () => {
    const huge = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: { ...bed.auth, 'content-type': 'application/json' }, payload: JSON.stringify({ metadata: { k: 'x'.repeat(1 << 20) } }) });
    assert.equal(huge.statusCode, 413);
    assert.equal(huge.json().error.code, 'PAYLOAD_TOO_LARGE');
    const bad = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: { ...bed.auth, 'content-type': 'application/json' }, payload: '{"template":' });
    assert.equal(bad.statusCode, 400);
    assert.deepEqual(bad.json().error, { code: 'VALIDATION_FAILED', message: 'body: not valid JSON (Unexpected end of JSON input)', details: { issues: [{ path: 'body', message: 'not valid JSON (Unexpected end of JSON input)' }] } });
  });

  test('domain errors map to their status: 404 SANDBOX_NOT_FOUND, 409 INVALID_STATE, 409 CHECKPOINT_BLOCKED', async () => {
    const missing = await bed.app.inject({ method: 'GET', url: '/v1/sandboxes/sbx_missing', headers: bed.auth });
    assert.equal(missing.statusCode, 404);
    assert.deepEqual(Object.keys(missing.json().error).sort(), ['code', 'details', 'message']);
    const sbx = await create();
    bed.world.runtime.guest(sbx.id).endpoints.push('10.254.0.2:4000 -> 1.2.3.4:443 ESTABLISHED');
    const blocked = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${sbx.id}/pause`, headers: bed.auth });
    assert.equal(blocked.statusCode, 409);
    assert.equal(blocked.json().error.code, 'CHECKPOINT_BLOCKED');
    assert.match(blocked.json().error.message, /1\.2\.3\.4:443/);
    bed.world.runtime.guest(sbx.id).endpoints.length = 0;
    const paused = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${sbx.id}/pause`, headers: { ...bed.auth, 'content-type': 'application/json' }, payload: '' });
    assert.equal(paused.statusCode, 200, paused.body);
    assert.equal(paused.json().state, 'paused');
    assert.equal(paused.json().endAt, null);
    const exec = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${sbx.id}/commands`, headers: bed.auth, payload: { cmd: 'echo hi' } });
    assert.equal(exec.statusCode, 409);
    assert.match(exec.json().error.message, /resume/);
  });

  test('an unexpected error is a bare 500 INTERNAL without its details', async () => {
    await bed.dispose();
    bed = await httpTestBed((store) => Object.assign(Object.create(store) as typeof store, { listTemplates: async () => { throw new Error('disk on fire /secret/path'); } }));
    const res = await bed.app.inject({ method: 'GET', url: '/v1/templates', headers: bed.auth });
    assert.equal(res.statusCode, 500);
    assert.deepEqual(res.json(), { error: { code: 'INTERNAL', message: 'internal error' } });
  });
});

describe('HTTP edge with the fake runtime: lifecycle routes and audit', () => {
  test('create, get, list, resume, fork, snapshot, timeout, kill (idempotent) follow the route table', async () => {
    const sbx = await create({ metadata: { team: 'red' }, timeoutMs: 60_000 });
    assert.equal(sbx.state, 'running');
    assert.equal((await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${sbx.id}`, headers: bed.auth })).json().id, sbx.id);
    const list = (await bed.app.inject({ method: 'GET', url: '/v1/sandboxes?metadata=team%3Dred&limit=10', headers: bed.auth })).json();
    assert.deepEqual(list.sandboxes.map((s: { id: string }) => s.id), [sbx.id]);
    assert.equal(list.nextToken, null);
    await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${sbx.id}/pause`, headers: bed.auth });
    const resumed = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${sbx.id}/resume`, headers: bed.auth, payload: { timeoutMs: 5_000 } });
    assert.equal(resumed.json().timeoutMs, 5_000);
    const fork = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${sbx.id}/fork`, headers: bed.auth, payload: { count: 2 } });
    assert.equal(fork.statusCode, 201);
    assert.equal(fork.json().sandboxes.length, 2);
    const snap = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${sbx.id}/snapshots`, headers: bed.auth, payload: { name: 'golden' } });
    assert.equal(snap.statusCode, 201);
    assert.equal(snap.json().kind, 'named');
    assert.equal((await bed.app.inject({ method: 'GET', url: '/v1/snapshots/golden', headers: bed.auth })).json().id, snap.json().id);
    const timeout = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${sbx.id}/timeout`, headers: bed.auth, payload: { timeoutMs: 1_000 } });
    assert.equal(timeout.json().timeoutMs, 1_000);
    const kill = await bed.app.inject({ method: 'DELETE', url: `/v1/sandboxes/${sbx.id}`, headers: bed.auth });
    assert.equal(kill.statusCode, 204);
    assert.equal(kill.body, '');
    assert.equal((await bed.app.inject({ method: 'DELETE', url: `/v1/sandboxes/${sbx.id}`, headers: bed.auth })).statusCode, 204);
    assert.equal((await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${sbx.id}`, headers: bed.auth })).json().state, 'killed');
    const gone = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${sbx.id}/commands`, headers: bed.auth, payload: { cmd: 'echo x' } });
    assert.equal(gone.statusCode, 404);
    assert.equal(gone.json().error.code, 'SANDBOX_NOT_FOUND');
    const del = await bed.app.inject({ method: 'DELETE', url: `/v1/snapshots/${snap.json().id}`, headers: bed.auth });
    assert.equal(del.statusCode, 204);
    // A sandbox running from the template's image: the template's delete is refused until it is killed.
    const other = await create();
    const busy = await bed.app.inject({ method: 'DELETE', url: '/v1/templates/base', headers: bed.auth });
    assert.equal(busy.statusCode, 409);
    assert.equal(busy.json().error.code, 'CONFLICT');
    await bed.app.inject({ method: 'DELETE', url: `/v1/sandboxes/${other.id}`, headers: bed.auth });
    assert.equal((await bed.app.inject({ method: 'DELETE', url: '/v1/templates/base', headers: bed.auth })).statusCode, 204);
    assert.deepEqual((await bed.app.inject({ method: 'GET', url: '/v1/templates', headers: bed.auth })).json().templates, []);
    assert.equal((await bed.app.inject({ method: 'DELETE', url: '/v1/templates/base', headers: bed.auth })).json().error.code, 'TEMPLATE_NOT_FOUND');
  });

  test('every mutating call is audited with who, what, status and error code; reads are not', async () => {
    const sbx = await create();
    await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${sbx.id}/resume`, headers: bed.auth });
    await bed.app.inject({ method: 'POST', url: '/v1/sandboxes/sbx_nope/pause', headers: bed.auth });
    await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', payload: {} });
    await bed.app.inject({ method: 'GET', url: '/v1/sandboxes', headers: bed.auth });
    const entries = (await bed.app.inject({ method: 'GET', url: '/v1/audit', headers: bed.auth })).json().entries;
    const keyId = (await bed.world.store.listApiKeys())[0].id;
    assert.deepEqual(
      entries.map((e: Record<string, unknown>) => [e.action, e.status, e.errorCode, e.apiKeyId, e.sandboxId]),
      [
        ['sandbox.pause', 404, 'SANDBOX_NOT_FOUND', keyId, 'sbx_nope'],
        ['sandbox.resume', 200, null, keyId, sbx.id],
        ['sandbox.create', 201, null, keyId, sbx.id],
      ],
    );
    // The call without a key is in the log of such calls, which the operator reads on its own.
    const anonymous = (await bed.app.inject({ method: 'GET', url: '/v1/audit?anonymous=true', headers: bed.auth })).json().entries;
    assert.deepEqual(anonymous.map((e: Record<string, unknown>) => [e.id, e.action, e.status, e.errorCode, e.apiKeyId, e.team]), [[1, 'sandbox.create', 401, 'UNAUTHORIZED', null, null]]);
    assert.deepEqual(entries.map((e: { id: number }) => e.id), [3, 2, 1], "numbered in the team's log");
    const mine = (await bed.app.inject({ method: 'GET', url: `/v1/audit?sandboxId=${sbx.id}&limit=1`, headers: bed.auth })).json().entries;
    assert.equal(mine.length, 1);
    assert.equal(mine[0].action, 'sandbox.resume');
    assert.match(mine[0].at, /^\d{4}-\d\d-\d\dT/);
  });
});

describe('HTTP edge with the fake runtime: template envs', () => {
  test('GET /v1/templates shows a template envs; a sandbox created from it gets them, the request envs winning per key', async () => {
    const base = await bed.world.store.findTemplateByName('base', 'default');
    assert.ok(base);
    await bed.world.store.putTemplate({ ...base, envs: { DATA_DIR: '/srv/data', MODE: 'tpl' } });
    const listed = (await bed.app.inject({ method: 'GET', url: '/v1/templates', headers: bed.auth })).json().templates;
    assert.deepEqual(listed.map((t: { name: string; envs: unknown }) => [t.name, t.envs]), [['base', { DATA_DIR: '/srv/data', MODE: 'tpl' }]]);
    const sbx = await create({ template: 'base', envs: { MODE: 'mine' } });
    assert.deepEqual(bed.world.runtime.guest(sbx.id).identities.at(-1)?.envs, { DATA_DIR: '/srv/data', MODE: 'mine' });
  });
});
