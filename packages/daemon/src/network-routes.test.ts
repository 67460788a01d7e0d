/**
 * HTTP-edge tests of the private network routes, in-process with `app.inject` over a core wired to core's
 * FAKE runtime and enforcers (validation, auth, error mapping, audit, OpenAPI; the isolation itself is
 * real-networks.test.ts's and the network package's).
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createViaApi, httpTestBed, type HttpTestBed } from './test-support.js';

let bed: HttpTestBed;
beforeEach(async () => {
  bed = await httpTestBed();
});
afterEach(async () => {
  await bed.dispose();
});

type Method = 'GET' | 'POST' | 'DELETE';
const call = (method: Method, url: string, payload?: unknown, headers: Record<string, string> = bed.auth) =>
  bed.app.inject({ method, url, headers, ...(payload !== undefined ? { payload: payload as object } : {}) });

describe('HTTP edge: private networks', () => {
  test('every new route refuses requests without the API key, or with a wrong one, and changes nothing', async () => {
    const { id } = await createViaApi(bed);
    assert.equal((await call('POST', '/v1/networks', { name: 'n1' })).statusCode, 201);
    const routes: Array<[Method, string, unknown?]> = [
      ['POST', '/v1/networks', { name: 'n2' }], ['GET', '/v1/networks'], ['GET', '/v1/networks/n1'], ['DELETE', '/v1/networks/n1'],
      ['GET', `/v1/sandboxes/${id}/networks`], ['POST', `/v1/sandboxes/${id}/networks`, { network: 'n1' }], ['DELETE', `/v1/sandboxes/${id}/networks/n1`],
    ];
    const keys: Array<Record<string, string>> = [{}, { authorization: 'Bearer rmf_wrongwrongwrongwrongwrongwrongwrongwr' }, { authorization: 'Basic abc' }];
    for (const headers of keys) {
      for (const [method, url, body] of routes) {
        const r = await call(method, url, body, headers);
        assert.equal(r.statusCode, 401, `${method} ${url} with ${JSON.stringify(headers)}: ${r.body}`);
        assert.equal(r.json().error.code, 'UNAUTHORIZED');
      }
    }
    const list = (await call('GET', '/v1/networks')).json();
    assert.deepEqual(list.networks.map((n: { name: string; members: unknown[] }) => [n.name, n.members.length]), [['n1', 0]], 'nothing was created, deleted or joined');
  });

  test('create, list, get (name or id), attach with an alias, the member listed with its hostname; audit entries', async () => {
    const created = await call('POST', '/v1/networks', { name: 'n1' });
    assert.equal(created.statusCode, 201, created.body);
    const n1 = created.json();
    assert.match(n1.id, /^net_/);
    const { id } = await createViaApi(bed);
    const attached = await call('POST', `/v1/sandboxes/${id}/networks`, { network: n1.id, alias: 'alpha' });
    assert.equal(attached.statusCode, 201, attached.body);
    assert.deepEqual([attached.json().network, attached.json().alias, attached.json().hostname], ['n1', 'alpha', 'alpha.n1.internal']);
    const got = (await call('GET', '/v1/networks/n1')).json();
    assert.deepEqual(got.members.map((m: { sandboxId: string; hostname: string }) => [m.sandboxId, m.hostname]), [[id, 'alpha.n1.internal']]);
    assert.equal((await call('GET', `/v1/networks/${n1.id}`)).json().name, 'n1');
    assert.deepEqual((await call('GET', `/v1/sandboxes/${id}/networks`)).json().networks.map((n: { hostname: string }) => n.hostname), ['alpha.n1.internal']);
    assert.equal((await call('DELETE', `/v1/sandboxes/${id}/networks/n1`)).statusCode, 204);
    assert.equal((await call('DELETE', `/v1/sandboxes/${id}/networks/n1`)).statusCode, 204, 'idempotent');
    assert.equal((await call('DELETE', '/v1/networks/n1')).statusCode, 204);
    const audit = (await call('GET', '/v1/audit')).json().entries.map((e: { action: string; status: number }) => `${e.action} ${e.status}`);
    for (const a of ['network.create 201', 'sandbox.network-attach 201', 'sandbox.network-detach 204', 'network.delete 204']) assert.ok(audit.includes(a), `${a} in ${audit.join(', ')}`);
  });

  test('bad input gets clear errors and changes nothing: invalid and duplicate names, unknown network, taken alias, network in use', async () => {
    await call('POST', '/v1/networks', { name: 'n1' });
    for (const name of ['N1', '-x', 'x-', 'a_b', 'a.b', '', 'x'.repeat(64)]) {
      const r = await call('POST', '/v1/networks', { name });
      assert.equal(r.statusCode, 400, `${name}: ${r.body}`);
      assert.equal(r.json().error.code, 'VALIDATION_FAILED');
      assert.match(r.json().error.message, /DNS label/);
    }
    const unknownField = await call('POST', '/v1/networks', { name: 'n2', cidr: '10.0.0.0/8' });
    assert.equal(unknownField.json().error.code, 'VALIDATION_FAILED');
    const dup = await call('POST', '/v1/networks', { name: 'n1' });
    assert.equal(dup.statusCode, 409);
    assert.equal(dup.json().error.code, 'NETWORK_EXISTS');
    const a = await createViaApi(bed, { networks: [{ network: 'n1', alias: 'a' }] });
    const b = await createViaApi(bed);
    const unknown = await call('POST', `/v1/sandboxes/${b.id}/networks`, { network: 'nope' });
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json().error.code, 'NETWORK_NOT_FOUND');
    const taken = await call('POST', `/v1/sandboxes/${b.id}/networks`, { network: 'n1', alias: 'a' });
    assert.equal(taken.statusCode, 409);
    assert.equal(taken.json().error.code, 'NETWORK_ALIAS_TAKEN');
    assert.equal(taken.json().error.details.sandboxId, a.id);
    const badAlias = await call('POST', `/v1/sandboxes/${b.id}/networks`, { network: 'n1', alias: 'Not_A_Label' });
    assert.equal(badAlias.statusCode, 400);
    const count = (await call('GET', '/v1/sandboxes')).json().sandboxes.length;
    for (const networks of [[{ network: 'nope' }], [{ network: 'n1', alias: 'a' }], [{ network: 'n1', alias: '' }]]) {
      const r = await call('POST', '/v1/sandboxes', { networks });
      assert.ok([400, 404, 409].includes(r.statusCode), r.body);
    }
    assert.equal((await call('GET', '/v1/sandboxes')).json().sandboxes.length, count, 'a refused create leaves no sandbox');
    const inUse = await call('DELETE', '/v1/networks/n1');
    assert.equal(inUse.statusCode, 409);
    assert.equal(inUse.json().error.code, 'NETWORK_IN_USE');
    assert.deepEqual(inUse.json().error.details.sandboxes, [a.id]);
    assert.ok(inUse.json().error.message.includes(a.id), inUse.json().error.message);
    assert.deepEqual((await call('GET', '/v1/networks/n1')).json().members.map((m: { alias: string }) => m.alias), ['a'], 'nothing changed');
    assert.equal((await call('GET', '/v1/networks/nope')).statusCode, 404);
  });

  test('fork: children join as <alias>-<n>; networks: false joins none; the OpenAPI document has the routes', async () => {
    await call('POST', '/v1/networks', { name: 'n1' });
    const parent = await createViaApi(bed, { networks: [{ network: 'n1', alias: 'p' }] });
    const forked = await call('POST', `/v1/sandboxes/${parent.id}/fork`, { count: 2 });
    assert.equal(forked.statusCode, 201, forked.body);
    const aliases = (await call('GET', '/v1/networks/n1')).json().members.map((m: { alias: string }) => m.alias);
    assert.deepEqual(aliases, ['p', 'p-1', 'p-2']);
    const alone = (await call('POST', `/v1/sandboxes/${parent.id}/fork`, { count: 1, networks: false })).json().sandboxes[0];
    assert.deepEqual((await call('GET', `/v1/sandboxes/${alone.id}/networks`)).json().networks, []);
    const doc = (await bed.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    for (const path of ['/v1/networks', '/v1/networks/{network}', '/v1/sandboxes/{id}/networks', '/v1/sandboxes/{id}/networks/{network}']) assert.ok(doc.paths[path], path);
    assert.ok(doc.paths['/v1/networks'].post && doc.paths['/v1/networks/{network}'].delete && doc.paths['/v1/sandboxes/{id}/networks/{network}'].delete);
  });
});
