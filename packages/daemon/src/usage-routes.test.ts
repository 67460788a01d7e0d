/**
 * HTTP-edge tests of metering, live metrics, fork trees and budgets, in-process with `app.inject` over a
 * core wired to core's FAKE runtime (counters set by the test; NOT runtime coverage: real-usage.test.ts
 * and real-budget.test.ts drive a real daemon): the routes and their shapes, team scoping (another team's
 * sandbox is 404 on every route, its usage rows invisible, no key is 401), bad input refused with
 * VALIDATION_FAILED and nothing changed, 429 BUDGET_EXCEEDED on a fork and a resume over budget, OpenAPI.
 */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createViaApi, httpTestBed, type HttpTestBed } from './test-support.js';

let bed: HttpTestBed;
beforeEach(async () => {
  bed = await httpTestBed();
});
afterEach(async () => {
  await bed.dispose();
});

type Headers = Record<string, string>;
async function call(headers: Headers, method: string, url: string, payload?: unknown): Promise<{ status: number; body: any }> {
  const res = await bed.app.inject({ method: method as 'GET', url, headers, ...(payload !== undefined ? { payload: payload as object } : {}) });
  return { status: res.statusCode, body: res.body ? res.json() : null };
}

/** Make team `id` and a member key of it; returns its headers. */
async function otherTeam(id: string): Promise<Headers> {
  assert.equal((await call(bed.auth, 'POST', '/v1/teams', { id })).status, 201);
  const made = await call(bed.auth, 'POST', '/v1/keys', { team: id, role: 'member' });
  return { authorization: `Bearer ${made.body.key}` };
}

const sample = (): Promise<unknown> => bed.world.core.meter.sampleRunning();

test('usage, metrics, tree and budget routes: shapes and figures', async () => {
  const { id } = await createViaApi(bed, { budget: { cpuSeconds: 100, maxSandboxes: 5 } });
  await sample();
  bed.world.runtime.cpuUs.set(id, 2_500_000);
  bed.world.clock.advance(5_000);
  await sample();
  const metrics = await call(bed.auth, 'GET', `/v1/sandboxes/${id}/metrics`);
  assert.equal(metrics.status, 200);
  assert.deepEqual(Object.keys(metrics.body.metrics[0]).sort(), ['cpuCount', 'cpuUsedPct', 'diskTotal', 'diskUsed', 'memTotal', 'memUsed', 'timestamp']);
  assert.equal(metrics.body.metrics[0].cpuUsedPct, 50);
  const usage = await call(bed.auth, 'GET', `/v1/usage?from=2000-01-01&sandboxId=${id}`);
  assert.equal(usage.status, 200);
  assert.equal(usage.body.team, 'default');
  assert.equal(usage.body.rows[0].key, id);
  assert.equal(usage.body.rows[0].cpuSeconds, 2.5);
  assert.equal(usage.body.rows[0].runningSeconds, 5);
  const forked = await call(bed.auth, 'POST', `/v1/sandboxes/${id}/fork`, { count: 2 });
  assert.equal(forked.status, 201);
  const tree = await call(bed.auth, 'GET', `/v1/sandboxes/${forked.body.sandboxes[0].id}/tree`);
  assert.equal(tree.status, 200);
  assert.equal(tree.body.rootId, id);
  assert.equal(tree.body.root.children.length, 2);
  assert.equal(tree.body.root.budget.limits.cpuSeconds, 100);
  const budgets = await call(bed.auth, 'GET', `/v1/sandboxes/${forked.body.sandboxes[1].id}/budget`);
  assert.deepEqual(budgets.body.budgets.map((b: { sandboxId: string; used: { sandboxes: number } }) => [b.sandboxId, b.used.sandboxes]), [[id, 3]]);
  const raised = await call(bed.auth, 'PATCH', `/v1/sandboxes/${id}/budget`, { cpuSeconds: 200, maxSandboxes: null });
  assert.equal(raised.status, 200);
  assert.deepEqual(raised.body.limits, { cpuSeconds: 200, sandboxSeconds: null, maxSandboxes: null });
  assert.equal((await call(bed.auth, 'DELETE', `/v1/sandboxes/${id}/budget`)).status, 204);
  assert.deepEqual((await call(bed.auth, 'GET', `/v1/sandboxes/${id}/budget`)).body.budgets, []);
  const byTree = await call(bed.auth, 'GET', '/v1/usage?from=2000-01-01&groupBy=tree');
  assert.deepEqual(byTree.body.rows.map((r: { key: string; sandboxes: number }) => [r.key, r.sandboxes]), [[id, 3]]);
  const audit = await call(bed.auth, 'GET', '/v1/audit?limit=5');
  assert.ok(audit.body.entries.some((e: { action: string }) => e.action === 'sandbox.budget'), 'a budget change is audited');
});

test("another team's key gets 404 for a sandbox's metrics, tree and budget, and sees none of its usage; no key is 401", async () => {
  const { id } = await createViaApi(bed, { budget: { cpuSeconds: 5 } });
  bed.world.clock.advance(1_000);
  const acme = await otherTeam('acme');
  for (const [method, path, body] of [
    ['GET', `/v1/sandboxes/${id}/metrics`], ['GET', `/v1/sandboxes/${id}/tree`], ['GET', `/v1/sandboxes/${id}/budget`],
    ['PATCH', `/v1/sandboxes/${id}/budget`, { cpuSeconds: 1000 }], ['DELETE', `/v1/sandboxes/${id}/budget`],
  ] as const) {
    const res = await call(acme, method, path, body);
    assert.equal(res.status, 404, `${method} ${path}`);
    assert.equal(res.body.error.code, 'SANDBOX_NOT_FOUND');
    assert.equal(res.body.error.message, `sandbox '${id}' not found`, 'the same as an unknown id');
    assert.equal((await call({}, method, path, body)).status, 401, `${method} ${path} without a key`);
  }
  assert.equal((await call(bed.auth, 'GET', `/v1/sandboxes/${id}/budget`)).body.budgets[0].limits.cpuSeconds, 5, 'their PATCH changed nothing');
  const theirs = await call(acme, 'GET', '/v1/usage?from=2000-01-01&groupBy=team');
  assert.equal(theirs.status, 200);
  assert.equal(theirs.body.team, 'acme');
  assert.deepEqual(theirs.body.rows, []);
  assert.deepEqual((await call(acme, 'GET', `/v1/usage?from=2000-01-01&sandboxId=${id}`)).body.rows, []);
  assert.equal((await call(bed.auth, 'GET', '/v1/usage?from=2000-01-01&groupBy=team')).body.rows[0].key, 'default');
  assert.equal((await call({}, 'GET', '/v1/usage')).status, 401);
});

test('bad input is 400 VALIDATION_FAILED and changes nothing', async () => {
  const before = (await call(bed.auth, 'GET', '/v1/sandboxes')).body.sandboxes.length;
  for (const budget of [{ cpuSeconds: -1 }, { sandboxSeconds: 0 }, { maxSandboxes: 0 }, { maxSandboxes: 1.5 }, { cpuSeconds: 'lots' }, { wallSeconds: 3 }]) {
    const res = await call(bed.auth, 'POST', '/v1/sandboxes', { budget });
    assert.equal(res.status, 400, JSON.stringify(budget));
    assert.equal(res.body.error.code, 'VALIDATION_FAILED');
  }
  assert.equal((await call(bed.auth, 'GET', '/v1/sandboxes')).body.sandboxes.length, before, 'no sandbox was made');
  const { id } = await createViaApi(bed, { budget: { cpuSeconds: 5 } });
  const negative = await call(bed.auth, 'PATCH', `/v1/sandboxes/${id}/budget`, { cpuSeconds: -5 });
  assert.equal(negative.status, 400);
  const empty = await call(bed.auth, 'PATCH', `/v1/sandboxes/${id}/budget`, {});
  assert.deepEqual([empty.status, empty.body.error.code], [400, 'VALIDATION_FAILED']);
  assert.match(empty.body.error.message, /at least one limit/);
  assert.match(negative.body.error.message, /body\.cpuSeconds/);
  assert.equal((await call(bed.auth, 'GET', `/v1/sandboxes/${id}/budget`)).body.budgets[0].limits.cpuSeconds, 5, 'unchanged');
  for (const query of ['groupBy=week', 'from=yesterday', 'to=2025-13-45', 'from=2025-02-01&to=2025-01-01', 'colour=red']) {
    const res = await call(bed.auth, 'GET', `/v1/usage?${query}`);
    assert.equal(res.status, 400, query);
    assert.equal(res.body.error.code, 'VALIDATION_FAILED', query);
  }
  assert.equal((await call(bed.auth, 'GET', `/v1/sandboxes/${id}/metrics?start=now`)).status, 400);
});

test('a fork or a resume of a tree over its budget is 429 BUDGET_EXCEEDED', async () => {
  const { id } = await createViaApi(bed, { budget: { cpuSeconds: 1 } });
  await sample();
  bed.world.runtime.cpuUs.set(id, 3_000_000);
  bed.world.clock.advance(5_000);
  const { UsageSampler } = await import('@ramify/core');
  await new UsageSampler(bed.world.core).sweep();
  assert.equal((await call(bed.auth, 'GET', `/v1/sandboxes/${id}`)).body.state, 'paused');
  const fork = await call(bed.auth, 'POST', `/v1/sandboxes/${id}/fork`, { count: 1 });
  assert.equal(fork.status, 429);
  assert.equal(fork.body.error.code, 'BUDGET_EXCEEDED');
  assert.deepEqual(fork.body.error.details, { sandboxId: id, limit: 'cpuSeconds', max: 1, used: 3 });
  assert.equal((await call(bed.auth, 'POST', `/v1/sandboxes/${id}/resume`)).status, 429);
  assert.equal((await call(bed.auth, 'PATCH', `/v1/sandboxes/${id}/budget`, { cpuSeconds: 10 })).body.exceeded, null);
  assert.equal((await call(bed.auth, 'POST', `/v1/sandboxes/${id}/resume`)).body.state, 'running');
});

test('the OpenAPI document has the routes', async () => {
  const doc = (await call({}, 'GET', '/v1/openapi.json')).body;
  for (const path of ['/v1/usage', '/v1/sandboxes/{id}/metrics', '/v1/sandboxes/{id}/tree', '/v1/sandboxes/{id}/budget']) assert.ok(doc.paths[path], path);
  assert.deepEqual(Object.keys(doc.paths['/v1/sandboxes/{id}/budget']).sort(), ['delete', 'get', 'patch']);
});
