/**
 * HTTP-edge tests of the egress routes, in-process with `app.inject`, over a core wired to core's FAKE
 * runtime and egress enforcer (validation, error mapping, audit, routing; NOT enforcement coverage).
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

const create = (body: Record<string, unknown> = {}) => createViaApi(bed, body);
const getEgress = (id: string) => bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}/egress`, headers: bed.auth });
const putEgress = (id: string, payload: unknown) => bed.app.inject({ method: 'PUT', url: `/v1/sandboxes/${id}/egress`, headers: bed.auth, payload: payload as object });

describe('HTTP edge: egress policy routes (fake runtime)', () => {
  test('create with egress, GET returns the normalised rules; PUT replaces them atomically', async () => {
    const sbx = await create({ egress: ['PyPI.org.', '*.githubusercontent.com:443'] });
    const got = await getEgress(sbx.id);
    assert.equal(got.statusCode, 200);
    assert.deepEqual(got.json().rules, ['pypi.org', '*.githubusercontent.com:443']);
    assert.equal(got.json().mode, 'allowlist');
    assert.match(got.json().updatedAt, /^\d{4}-\d\d-\d\dT/);

    const put = await putEgress(sbx.id, { rules: ['Bücher.de:443', '10.0.0.0/8'] });
    assert.equal(put.statusCode, 200, put.body);
    assert.deepEqual(put.json().rules, ['xn--bcher-kva.de:443', '10.0.0.0/8']);
    assert.deepEqual((await getEgress(sbx.id)).json().rules, ['xn--bcher-kva.de:443', '10.0.0.0/8']);
    assert.deepEqual(bed.world.egress.rulesOf(sbx.id), ['xn--bcher-kva.de:443', '10.0.0.0/8']);

    const open = await putEgress(sbx.id, { rules: [] });
    assert.deepEqual({ ...(open.json() as object), updatedAt: 'x' }, { rules: [], mode: 'open', updatedAt: 'x' });
    const fresh = await create();
    assert.deepEqual((await getEgress(fresh.id)).json(), { rules: [], mode: 'open', updatedAt: null });
  });

  test("deny-all: create with egress { mode: 'deny-all' }, PUT { mode: 'deny-all' } and back; a mode that does not fit the rules is a 400", async () => {
    const sbx = await create({ egress: { mode: 'deny-all' } });
    const got = (await getEgress(sbx.id)).json();
    assert.deepEqual([got.mode, got.rules], ['deny-all', []]);
    assert.equal(bed.world.egress.modeOf(sbx.id), 'deny-all');

    const allow = await putEgress(sbx.id, { mode: 'allowlist', rules: ['PyPI.org'] });
    assert.equal(allow.statusCode, 200, allow.body);
    assert.deepEqual([allow.json().mode, allow.json().rules], ['allowlist', ['pypi.org']]);
    const deny = await putEgress(sbx.id, { mode: 'deny-all' });
    assert.deepEqual([deny.json().mode, deny.json().rules], ['deny-all', []]);
    assert.equal(bed.world.egress.modeOf(sbx.id), 'deny-all');
    const open = await putEgress(sbx.id, { mode: 'open' });
    assert.deepEqual([open.json().mode, open.json().rules], ['open', []]);

    for (const [body, message] of [
      [{ mode: 'deny-all', rules: ['pypi.org'] }, /mode 'deny-all' takes no rules/],
      [{ mode: 'allowlist', rules: [] }, /needs at least one rule; to deny all egress use mode 'deny-all'/],
      [{}, /needs rules or a mode/],
    ] as const) {
      const res = await putEgress(sbx.id, body);
      assert.equal(res.statusCode, 400, res.body);
      assert.equal(res.json().error.code, 'VALIDATION_FAILED');
      assert.match(res.json().error.message, message);
    }
    assert.equal(bed.world.egress.modeOf(sbx.id), 'open', 'refused bodies change nothing');
    const badCreate = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: bed.auth, payload: { egress: { mode: 'deny-all', rules: ['pypi.org'] } } });
    assert.equal(badCreate.statusCode, 400);
  });

  test('a named snapshot shows the policy it recorded; a sandbox created from it starts with it unless the body gives egress', async () => {
    const sbx = await create({ egress: { mode: 'deny-all' } });
    const snap = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${sbx.id}/snapshots`, headers: bed.auth, payload: { name: 'sealed' } });
    assert.equal(snap.statusCode, 201, snap.body);
    assert.deepEqual(snap.json().egress, { mode: 'deny-all', rules: [] });
    assert.deepEqual((await bed.app.inject({ method: 'GET', url: '/v1/snapshots/sealed', headers: bed.auth })).json().egress, { mode: 'deny-all', rules: [] });
    const listed = (await bed.app.inject({ method: 'GET', url: '/v1/snapshots', headers: bed.auth })).json().snapshots;
    assert.deepEqual(listed.find((s: { name: string | null }) => s.name === 'sealed').egress, { mode: 'deny-all', rules: [] });
    assert.equal(listed.find((s: { kind: string }) => s.kind === 'template').egress, null, 'a template image records none');

    const child = await create({ snapshot: 'sealed' });
    assert.equal((await getEgress(child.id)).json().mode, 'deny-all');
    const opened = await create({ snapshot: 'sealed', egress: ['pypi.org'] });
    assert.deepEqual((await getEgress(opened.id)).json().rules, ['pypi.org']);
  });

  test('every bad rule is a 400 naming it, and the policy in force is unchanged', async () => {
    const sbx = await create({ egress: ['pypi.org'] });
    const before = (await getEgress(sbx.id)).json();
    const cases: Array<[string[], number, RegExp]> = [
      [['pypi.org', '*.com'], 1, /^egress rule 2 '\*\.com': a wildcard cannot cover a public suffix/],
      [['foo.*.com'], 0, /^egress rule 1 'foo\.\*\.com': a wildcard is only allowed as the whole first label/],
      [['example.com:0'], 0, /port 0 is outside 1-65535/],
      [['example.com:70000'], 0, /port 70000 is outside 1-65535/],
      [['10.0.0.0/33'], 0, /^egress rule 1 '10\.0\.0\.0\/33': prefix length/],
      [['300.1.1.1/8'], 0, /'300\.1\.1\.1' is not a valid IPv4 address/],
      [['2001:db8::1'], 0, /IPv6/],
      [['pypi.org', 'none'], 1, /^egress rule 2 'none': 'none' is a single label, not a host name .*mode 'deny-all'/],
      [Array.from({ length: 10_000 }, (_, i) => `h${i}.example.com`), 1000, /^egress rule 1001 'h1000\.example\.com': too many rules \(10000\)/],
    ];
    for (const [rules, index, message] of cases) {
      const res = await putEgress(sbx.id, { rules });
      assert.equal(res.statusCode, 400, res.body);
      const { error } = res.json();
      assert.equal(error.code, 'VALIDATION_FAILED');
      assert.match(error.message, message);
      assert.equal(error.details.index, index);
      assert.equal(error.details.rule, rules[index]);
      const path = index === 1000 ? 'body.rules' : `body.rules.${index}`;
      assert.deepEqual(error.details.issues.map((i: { path: string }) => i.path), [path], 'the issue names the field, not a fallback');
      assert.deepEqual((await getEgress(sbx.id)).json(), before, `unchanged after ${rules[index]}`);
    }
    assert.deepEqual(bed.world.egress.rulesOf(sbx.id), ['pypi.org']);

    const badCreate = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: bed.auth, payload: { egress: ['ok.example.com', '*.co.uk'] } });
    assert.equal(badCreate.statusCode, 400);
    assert.match(badCreate.json().error.message, /^egress rule 2 '\*\.co\.uk'/);
    assert.deepEqual(badCreate.json().error.details.issues, [{ path: 'body.egress.1', message: "a wildcard cannot cover a public suffix ('co.uk' is one)", rule: '*.co.uk' }]);
  });

  test('the body is strict; killed and unknown sandboxes are 404; the log is an empty list for now', async () => {
    const sbx = await create();
    const extra = await putEgress(sbx.id, { rules: [], default: 'deny' });
    assert.equal(extra.statusCode, 400);
    assert.match(extra.json().error.message, /unknown field 'default'/);
    const badMode = await putEgress(sbx.id, { mode: 'none' });
    assert.equal(badMode.statusCode, 400);
    assert.match(badMode.json().error.message, /body\.mode/);
    const notStrings = await putEgress(sbx.id, { rules: [443] });
    assert.equal(notStrings.statusCode, 400);
    assert.match(notStrings.json().error.message, /body\.rules\.0/);
    const log = await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${sbx.id}/egress/log?limit=5`, headers: bed.auth });
    assert.equal(log.statusCode, 200);
    assert.deepEqual(log.json(), { entries: [] });

    await bed.app.inject({ method: 'DELETE', url: `/v1/sandboxes/${sbx.id}`, headers: bed.auth });
    for (const id of [sbx.id, 'sbx_missing']) {
      assert.equal((await getEgress(id)).json().error.code, 'SANDBOX_NOT_FOUND');
      assert.equal((await putEgress(id, { rules: ['pypi.org'] })).statusCode, 404);
      assert.equal((await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}/egress/log`, headers: bed.auth })).statusCode, 404);
    }
  });

  test('PUT is audited (reads are not) and documented in OpenAPI', async () => {
    const sbx = await create();
    await putEgress(sbx.id, { rules: ['pypi.org'] });
    await putEgress(sbx.id, { rules: ['*.com'] });
    await getEgress(sbx.id);
    const entries = (await bed.app.inject({ method: 'GET', url: `/v1/audit?sandboxId=${sbx.id}`, headers: bed.auth })).json().entries;
    assert.deepEqual(
      entries.map((e: Record<string, unknown>) => [e.action, e.status, e.errorCode]),
      [
        ['sandbox.egress', 400, 'VALIDATION_FAILED'],
        ['sandbox.egress', 200, null],
        ['sandbox.create', 201, null],
      ],
    );
    const doc = (await bed.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    assert.ok(doc.paths['/v1/sandboxes/{id}/egress'].get);
    assert.ok(doc.paths['/v1/sandboxes/{id}/egress'].put);
    assert.ok(doc.paths['/v1/sandboxes/{id}/egress/log'].get);
    const body = doc.paths['/v1/sandboxes/{id}/egress'].put.requestBody.content['application/json'].schema;
    assert.deepEqual(body.properties.mode.enum, ['open', 'allowlist', 'deny-all']);
    assert.match(body.description, /deny-all/);
    const createEgress = doc.paths['/v1/sandboxes'].post.requestBody.content['application/json'].schema.properties.egress;
    assert.equal(createEgress.anyOf.length, 2, 'create egress: a rule list or a policy object');
    assert.match(doc.info.description, /Snapshots carry the policy: `SnapshotInfo\.egress`/);
    assert.match(doc.info.description, /`deny-all` \(nothing leaves/);
    const snapshotEgress = doc.paths['/v1/snapshots/{id}'].get.responses['200'].content['application/json'].schema.properties.egress;
    assert.match(snapshotEgress.description, /null: none recorded/);
  });
});
