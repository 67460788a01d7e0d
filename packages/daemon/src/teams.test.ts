/**
 * HTTP-edge tests of teams, API keys with roles, and team scoping, in-process with `app.inject` over a
 * core wired to core's FAKE runtime and agent (auth, roles, scoping of every sandbox route and stream,
 * error mapping, audit; NOT runtime coverage: real-teams.test.ts drives a real daemon).
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { WebSocket } from 'ws';
import { ROUTES } from '@ramify/contracts';
import { API_ROUTES } from './app.js';
import { scopeOf } from './http/scope.js';
import { bearer, callApp, httpTestBed, teamWithKey as makeTeamWithKey, type AuthHeaders, type HttpTestBed } from './test-support.js';

let bed: HttpTestBed;
beforeEach(async () => {
  bed = await httpTestBed();
});
afterEach(async () => {
  await bed.dispose();
});

type Headers = AuthHeaders;
const call = (headers: Headers | Record<string, never>, method: string, url: string, payload?: unknown): ReturnType<typeof callApp> => callApp(bed, headers, method, url, payload);
const teamWithKey = (id: string, role: 'admin' | 'member' = 'member'): Promise<Headers> => makeTeamWithKey(bed, id, role);

interface AuditRow { id: number; team: string | null; action: string; status: number; errorCode: string | null; sandboxId: string | null }

/**
 * `GET /v1/audit{query}` with `headers` once it holds at least `count` entries (each is written after its
 * call's answer, so the last one may land a moment after the call returned).
 */
async function auditOf(headers: Headers, query: string, count: number): Promise<AuditRow[]> {
  for (let attempt = 0; ; attempt++) {
    const res = await call(headers, 'GET', `/v1/audit${query}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const entries = res.body.entries as AuditRow[];
    if (entries.length >= count || attempt >= 200) return entries;
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The first frame of a stream and its close code (0: it was still open after a first frame that is not an error). */
function wsFrames(url: string, headers: Headers): Promise<{ first: { type: string; code?: string }; code: number }> {
  return new Promise((resolve, reject) => {
    void bed.app
      .injectWS(url, { headers }, {
        onInit: (ws: WebSocket) => {
          let first: { type: string; code?: string } | null = null;
          ws.on('message', (data) => {
            first ??= JSON.parse(data.toString()) as { type: string; code?: string };
            if (first.type !== 'error') {
              ws.terminate();
              resolve({ first, code: 0 });
            }
          });
          ws.on('close', (code) => {
            ws.terminate();
            resolve({ first: first ?? { type: 'none' }, code });
          });
        },
      })
      .catch(reject);
  });
}

describe('teams and keys', () => {
  test('the operator makes teams and keys; the secret is shown once and stored as a hash; list shows prefix, team, role, times', async () => {
    const made = await call(bed.auth, 'POST', '/v1/teams', { id: 'acme', quota: { maxRunning: 3 } });
    assert.equal(made.status, 201);
    assert.deepEqual(made.body.quota, { maxRunning: 3, maxMemoryMB: null, maxForksPerCall: null });
    assert.deepEqual(made.body.usage, { running: 0, memoryMB: 0 });
    const key = await call(bed.auth, 'POST', '/v1/keys', { team: 'acme', ttlMs: 30 * 86_400_000 });
    assert.equal(key.status, 201);
    assert.match(key.body.key, /^rmf_[A-Za-z0-9_-]{43}$/);
    assert.deepEqual([key.body.team, key.body.role, key.body.prefix], ['acme', 'member', key.body.key.slice(0, 8)]);
    assert.equal(Date.parse(key.body.expiresAt), bed.world.clock.now() + 30 * 86_400_000);
    const stored = await bed.world.store.getApiKey(key.body.id);
    assert.ok(stored && stored.hash !== key.body.key && !JSON.stringify(stored).includes(key.body.key), 'only a hash is stored');
    assert.equal((await call(bearer(key.body.key), 'GET', '/v1/sandboxes')).status, 200);

    const listed = await call(bed.auth, 'GET', '/v1/keys?team=acme');
    assert.deepEqual(Object.keys(listed.body.keys[0]).sort(), ['createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'prefix', 'revokedAt', 'role', 'status', 'team']);
    assert.equal(listed.body.keys[0].status, 'active');
    assert.equal(key.body.status, 'active');
    assert.equal(listed.body.keys[0].lastUsedAt, new Date(bed.world.clock.now()).toISOString());
    assert.ok(!JSON.stringify(listed.body).includes(key.body.key));
    const teams = await call(bed.auth, 'GET', '/v1/teams');
    assert.deepEqual(teams.body.teams.map((t: { id: string }) => t.id), ['acme', 'default']);
    assert.deepEqual((await call(bearer(key.body.key), 'GET', '/v1/teams')).body.teams.map((t: { id: string }) => t.id), ['acme'], 'a member sees its own team');
  });

  test('a member key cannot manage keys or teams (403); a team admin manages only its own team (403 for keys of others, 404 for their teams)', async () => {
    const member = await teamWithKey('acme');
    for (const [method, url, payload] of [['POST', '/v1/keys', {}], ['GET', '/v1/keys', undefined], ['POST', '/v1/teams', { id: 'x' }], ['PATCH', '/v1/teams/acme', { quota: { maxRunning: 1 } }]] as const) {
      const res = await call(member, method, url, payload);
      assert.deepEqual([res.status, res.body.error.code], [403, 'FORBIDDEN'], `${method} ${url}`);
    }
    const admin = await teamWithKey('beta', 'admin');
    assert.equal((await call(admin, 'POST', '/v1/keys', { role: 'member' })).body.team, 'beta', "default: the caller's team");
    // Keys of another team, the default team's included: one clear 403 whether the team exists or not.
    const refusals = [];
    for (const team of ['default', 'acme', 'nope']) {
      const made = await call(admin, 'POST', '/v1/keys', { team });
      assert.deepEqual([made.status, made.body.error.code], [403, 'FORBIDDEN'], team);
      assert.equal(made.body.error.message, `creating an API key for team '${team}' is refused: this admin key of team 'beta' manages the keys of team 'beta' only (leave the team out); the keys of other teams are managed by the operator (an admin key of the 'default' team)`);
      const listed = await call(admin, 'GET', `/v1/keys?team=${team}`);
      assert.deepEqual([listed.status, listed.body.error.code], [403, 'FORBIDDEN'], team);
      refusals.push(listed.body.error.message.replace(team, 'T'));
    }
    assert.equal(new Set(refusals).size, 1, 'nothing tells an existing team from an unknown one');
    const seen = await call(admin, 'GET', '/v1/teams/acme');
    assert.deepEqual([seen.status, seen.body.error.code, seen.body.error.message], [404, 'TEAM_NOT_FOUND', "team 'acme' not found (a key of team 'beta' sees that team only)"]);
    assert.equal((await call(admin, 'GET', '/v1/teams/nope')).body.error.message, seen.body.error.message.replace('acme', 'nope'));
    assert.equal((await bed.world.store.listApiKeys({ teamId: 'default' })).length, 1, 'no key made for the default team');
    assert.ok((await call(admin, 'GET', '/v1/keys')).body.keys.every((k: { team: string }) => k.team === 'beta'));
    const acmeKeys = (await call(bed.auth, 'GET', '/v1/keys?team=acme')).body.keys;
    assert.deepEqual((await call(admin, 'DELETE', `/v1/keys/${acmeKeys[0].id}`)).body.error.code, 'API_KEY_NOT_FOUND');
    assert.equal((await call(member, 'GET', '/v1/sandboxes')).status, 200, 'the other team admin revoked nothing');
    assert.deepEqual((await call(admin, 'POST', '/v1/teams', { id: 'gamma' })).body.error.code, 'FORBIDDEN');
  });

  test('a revoked key is 401 from its next request; an expired one is 401 once its time has come', async () => {
    await call(bed.auth, 'POST', '/v1/teams', { id: 'acme' });
    const made = (await call(bed.auth, 'POST', '/v1/keys', { team: 'acme', ttlMs: 60_000 })).body;
    const other = (await call(bed.auth, 'POST', '/v1/keys', { team: 'acme' })).body;
    assert.equal((await call(bearer(made.key), 'GET', '/v1/sandboxes')).status, 200);
    bed.world.clock.advance(60_000);
    const expired = await call(bearer(made.key), 'GET', '/v1/sandboxes');
    assert.deepEqual([expired.status, expired.body.error.code], [401, 'UNAUTHORIZED']);
    assert.equal((await call(bearer(other.key), 'GET', '/v1/sandboxes')).status, 200);
    assert.equal((await call(bed.auth, 'DELETE', `/v1/keys/${other.id}`)).status, 204);
    assert.equal((await call(bearer(other.key), 'GET', '/v1/sandboxes')).status, 401);
    assert.equal((await call(bed.auth, 'DELETE', `/v1/keys/${other.id}`)).status, 204, 'idempotent');
    const keys = (await call(bed.auth, 'GET', '/v1/keys?team=acme')).body.keys as Array<{ id: string; status: string; revokedAt: string | null }>;
    assert.notEqual(keys[1]?.revokedAt, null);
    assert.deepEqual(keys.map((k) => [k.id, k.status]), [[made.id, 'expired'], [other.id, 'revoked']], 'the listing tells expired and revoked keys apart');
    assert.equal((await call(bed.auth, 'DELETE', `/v1/keys/${made.id}`)).status, 204);
    assert.equal((await call(bed.auth, 'GET', '/v1/keys?team=acme')).body.keys[0].status, 'revoked', 'revoked wins over expired');
    const own = (await call(bed.auth, 'GET', '/v1/keys?team=default')).body.keys[0];
    assert.deepEqual((await call(bed.auth, 'DELETE', `/v1/keys/${own.id}`)).body.error.code, 'CONFLICT', 'the last admin key of the default team stays');
  });

  test('bad input: unknown team, invalid role, invalid team id, negative quota, bad audit cursor: clear errors, nothing changed', async () => {
    // A RegExp matches part of the message; a string is the whole message (the plain words of http/validate.ts).
    const cases: Array<[string, string, unknown, number, string, RegExp | string]> = [
      ['POST', '/v1/keys', { team: 'nope' }, 404, 'TEAM_NOT_FOUND', /team 'nope' not found/],
      ['POST', '/v1/keys', { role: 'owner' }, 400, 'VALIDATION_FAILED', "body.role: must be one of admin, member, got 'owner'"],
      ['POST', '/v1/keys', { ttlMs: 5 }, 400, 'VALIDATION_FAILED', 'body.ttlMs: must be an integer from 60000 to 315360000000, got 5'],
      ['POST', '/v1/teams', { id: 'Not A Team' }, 400, 'VALIDATION_FAILED', "body.id: must be 1-63 lower-case letters, digits and -, starting with a letter or digit, got 'Not A Team'"],
      ['POST', '/v1/teams', { id: 'X'.repeat(100) }, 400, 'VALIDATION_FAILED', `body.id: must be 1-63 lower-case letters, digits and -, starting with a letter or digit, got '${'X'.repeat(40)}...'`],
      ['POST', '/v1/teams', { id: 'acme', quota: { maxRunning: -1 } }, 400, 'VALIDATION_FAILED', 'body.quota.maxRunning: must be an integer from 0 to 1000000000, or null, got -1'],
      ['PATCH', '/v1/teams/default', { quota: { maxMemoryMB: -5 } }, 400, 'VALIDATION_FAILED', 'body.quota.maxMemoryMB: must be an integer from 0 to 1000000000, or null, got -5'],
      ['PATCH', '/v1/teams/nope', { quota: { maxRunning: 1 } }, 404, 'TEAM_NOT_FOUND', /nope/],
      ['PATCH', `/v1/teams/${'t'.repeat(100)}`, { quota: { maxRunning: 1 } }, 404, 'TEAM_NOT_FOUND', `team '${'t'.repeat(40)}...' not found`],
      ['POST', '/v1/teams', { id: 'default' }, 409, 'CONFLICT', /already exists/],
      ['GET', '/v1/audit?before=0', undefined, 400, 'VALIDATION_FAILED', 'query.before: must be an integer from 1 to 9007199254740991, got 0'],
      ['GET', '/v1/audit?before=abc', undefined, 400, 'VALIDATION_FAILED', "query.before: must be an integer from 1 to 9007199254740991, got 'abc'"],
      ['GET', '/v1/audit?before=1.5', undefined, 400, 'VALIDATION_FAILED', 'query.before: must be an integer from 1 to 9007199254740991, got 1.5'],
      ['GET', '/v1/audit?before=9007199254740992', undefined, 400, 'VALIDATION_FAILED', 'query.before: must be an integer from 1 to 9007199254740991, got 9007199254740992'],
      ['GET', '/v1/audit?anonymous=yes', undefined, 400, 'VALIDATION_FAILED', "query.anonymous: must be one of true, false, got 'yes'"],
    ];
    for (const [method, url, payload, status, code, message] of cases) {
      const res = await call(bed.auth, method, url, payload);
      assert.deepEqual([res.status, res.body.error.code], [status, code], `${method} ${url} ${JSON.stringify(payload)}`);
      if (typeof message === 'string') assert.equal(res.body.error.message, message);
      else assert.match(res.body.error.message, message);
    }
    assert.deepEqual((await bed.world.store.listTeams()).map((t) => [t.id, t.quota.maxMemoryMB]), [['default', null]], 'no team made, no quota changed');
    assert.equal((await bed.world.store.listApiKeys()).length, 1, 'no key made');
  });
});

describe('team scoping', () => {
  test("another team's sandbox is 404 on every sandbox route, REST and streams; lists hold only the team's own", async () => {
    const a = await teamWithKey('team-a');
    const b = await teamWithKey('team-b');
    const sbx = (await call(a, 'POST', '/v1/sandboxes', {})).body;
    assert.equal(sbx.team, 'team-a');
    await call(a, 'PUT', `/v1/sandboxes/${sbx.id}/ports/8000`, {});
    const routes: Array<[string, string, unknown?]> = [
      ['GET', ''], ['DELETE', ''], ['POST', '/pause'], ['POST', '/resume'], ['POST', '/fork', { count: 1 }], ['POST', '/snapshots', { name: 's' }],
      ['POST', '/timeout', { timeoutMs: 60_000 }], ['GET', '/egress'], ['PUT', '/egress', { mode: 'deny-all' }], ['GET', '/egress/log'],
      ['GET', '/ports'], ['PUT', '/ports/8000', {}], ['DELETE', '/ports/8000'], ['GET', '/ports/8000/url'], ['PUT', '/auto-resume', { autoResume: false }],
      ['PUT', '/auto-pause', { autoPause: null }], ['GET', '/ingress/log'], ['POST', '/commands', { cmd: 'true' }], ['POST', '/pty', {}],
      ['GET', '/processes'], ['POST', '/processes/1/signal', { signal: 'SIGTERM' }], ['GET', '/processes/1/wait'], ['GET', '/files?path=/root/hello.txt'],
      ['GET', '/files/list?path=/root'], ['GET', '/files/stat?path=/root'], ['POST', '/files/mkdir', { path: '/root/x' }], ['POST', '/files/remove', { path: '/root/hello.txt' }],
      ['POST', '/files/rename', { from: '/root/hello.txt', to: '/root/y' }], ['DELETE', '/files/watch/w1'], ['POST', '/ssh-access', {}],
    ];
    for (const [method, suffix, payload] of routes) {
      const res = await call(b, method, `/v1/sandboxes/${sbx.id}${suffix}`, payload);
      assert.deepEqual([res.status, res.body?.error.code], [404, 'SANDBOX_NOT_FOUND'], `${method} ${suffix}`);
      assert.equal(res.body.error.message, `sandbox '${sbx.id}' not found`, 'the same answer as an unknown id');
    }
    for (const url of [`/v1/sandboxes/${sbx.id}/commands/stream`, `/v1/sandboxes/${sbx.id}/pty/stream`, `/v1/sandboxes/${sbx.id}/files/watch?path=/root`, `/v1/sandboxes/${sbx.id}/processes/1/stream`, `/v1/sandboxes/${sbx.id}/files/watch/w1?from=0`]) {
      const { first, code } = await wsFrames(url, b);
      assert.deepEqual([first.type, first.code, code], ['error', 'SANDBOX_NOT_FOUND', 1008], url);
    }
    const upload = await bed.app.inject({ method: 'PUT', url: `/v1/sandboxes/${sbx.id}/files?path=/root/z`, headers: { ...b, 'content-type': 'application/octet-stream' }, payload: Buffer.from('x') });
    assert.equal(upload.statusCode, 404);

    assert.deepEqual((await call(b, 'GET', '/v1/sandboxes')).body.sandboxes, []);
    assert.deepEqual((await call(a, 'GET', '/v1/sandboxes')).body.sandboxes.map((s: { id: string }) => s.id), [sbx.id]);
    assert.equal((await call(a, 'GET', `/v1/sandboxes/${sbx.id}`)).body.state, 'running', "nothing of team-b's calls reached it");
    assert.equal((await call(a, 'GET', `/v1/sandboxes/${sbx.id}/files?path=/root/hello.txt`)).status, 200);
    const { first } = await wsFrames(`/v1/sandboxes/${sbx.id}/files/watch?path=/root`, a);
    assert.equal(first.type, 'watching', 'its own team streams as before');
    const auditB = (await call(b, 'GET', '/v1/audit')).body.entries;
    assert.ok(auditB.every((e: { team: string }) => e.team === 'team-b') && !auditB.some((e: { status: number }) => e.status < 400), "team-b's log: its own refused calls only");
    assert.ok((await call(a, 'GET', '/v1/audit')).body.entries.some((e: { action: string; team: string }) => e.action === 'sandbox.create' && e.team === 'team-a'));
  });

  test("audit ids are numbered per team: team B's calls between team A's leave A's ids consecutive; paging by id", async () => {
    const a = await teamWithKey('team-a');
    const b = await teamWithKey('team-b');
    const sbx = (await call(a, 'POST', '/v1/sandboxes', {})).body;
    for (let i = 0; i < 3; i++) await call(b, 'POST', '/v1/sandboxes', {});
    await call({}, 'POST', '/v1/sandboxes', {});
    assert.equal((await call(a, 'POST', `/v1/sandboxes/${sbx.id}/pause`)).status, 200);
    await call(b, 'POST', '/v1/sandboxes/sbx_nope/pause');
    await call(b, 'DELETE', `/v1/sandboxes/${sbx.id}`);
    assert.equal((await call(a, 'POST', '/v1/sandboxes/sbx_nope/pause')).status, 404);
    const mine = await auditOf(a, '', 3);
    assert.deepEqual(mine.map((e) => [e.id, e.action, e.status, e.team]), [[3, 'sandbox.pause', 404, 'team-a'], [2, 'sandbox.pause', 200, 'team-a'], [1, 'sandbox.create', 201, 'team-a']]);
    assert.deepEqual((await auditOf(b, '', 5)).map((e) => [e.id, e.team]), [[5, 'team-b'], [4, 'team-b'], [3, 'team-b'], [2, 'team-b'], [1, 'team-b']]);
    // Paging backwards with the last id of each page.
    assert.deepEqual((await auditOf(a, '?limit=2', 2)).map((e) => e.id), [3, 2]);
    assert.deepEqual((await auditOf(a, '?limit=2&before=2', 1)).map((e) => e.id), [1]);
    assert.deepEqual((await call(a, 'GET', '/v1/audit?before=1')).body.entries, []);
  });

  test("a crafted cursor cannot page into another team's entries; calls without a valid key are the operator's, numbered on their own", async () => {
    const a = await teamWithKey('team-a', 'admin');
    const b = await teamWithKey('team-b');
    await call(a, 'POST', '/v1/sandboxes', {});
    for (let i = 0; i < 6; i++) await call(b, 'POST', '/v1/sandboxes', {});
    await call({}, 'POST', '/v1/sandboxes', {});
    await call({ authorization: 'Bearer rmf_not-a-key' }, 'POST', '/v1/sandboxes', {});
    await auditOf(b, '', 6);
    for (const before of [2, 5, 7, 1000, Number.MAX_SAFE_INTEGER]) {
      const page = (await call(a, 'GET', `/v1/audit?before=${before}&limit=1000`)).body.entries as AuditRow[];
      assert.deepEqual(page.map((e) => [e.id, e.team]), [[1, 'team-a']], `before=${before}: team-a's own entry only`);
    }
    const theirs = (await auditOf(b, '', 6))[0]?.sandboxId;
    assert.ok(theirs);
    assert.deepEqual((await call(a, 'GET', `/v1/audit?sandboxId=${theirs}`)).body.entries, [], "another team's sandbox filters to nothing");
    for (const bad of ['0', '-1', '1.5', 'abc', String(Number.MAX_SAFE_INTEGER + 2)]) {
      assert.deepEqual([(await call(a, 'GET', `/v1/audit?before=${bad}`)).body.error?.code], ['VALIDATION_FAILED'], `before=${bad}`);
    }
    // The anonymous stream: the operator's only (a team's admin key, a member key: 403), never in a team's log.
    for (const key of [a, b]) assert.deepEqual([(await call(key, 'GET', '/v1/audit?anonymous=true')).status], [403]);
    const anonymous = await auditOf(bed.auth, '?anonymous=true', 2);
    assert.deepEqual(anonymous.map((e) => [e.id, e.team, e.status, e.errorCode]), [[2, null, 401, 'UNAUTHORIZED'], [1, null, 401, 'UNAUTHORIZED']]);
    assert.ok(!(await auditOf(bed.auth, '', 0)).some((e) => e.team !== 'default'), "the operator's own log holds its team's calls only");
  });

  test('snapshots, templates and SSH keys: per team; the default team\'s templates are shared', async () => {
    const a = await teamWithKey('team-a');
    const b = await teamWithKey('team-b');
    const sbx = (await call(a, 'POST', '/v1/sandboxes', {})).body;
    const snap = (await call(a, 'POST', `/v1/sandboxes/${sbx.id}/snapshots`, { name: 'golden' })).body;
    assert.equal(snap.team, 'team-a');
    for (const url of [`/v1/snapshots/${snap.id}`, '/v1/snapshots/golden']) {
      assert.equal((await call(b, 'GET', url)).body.error.code, 'SNAPSHOT_NOT_FOUND', url);
      assert.equal((await call(b, 'DELETE', url)).body.error.code, 'SNAPSHOT_NOT_FOUND', url);
    }
    assert.equal((await call(b, 'POST', '/v1/sandboxes', { snapshot: snap.id })).body.error.code, 'SNAPSHOT_NOT_FOUND');
    assert.ok(!(await call(b, 'GET', '/v1/snapshots')).body.snapshots.some((s: { id: string }) => s.id === snap.id));
    assert.equal((await call(a, 'GET', '/v1/snapshots/golden')).body.id, snap.id);
    const fromOwn = await call(a, 'POST', '/v1/sandboxes', { snapshot: 'golden' });
    assert.equal(fromOwn.status, 201);

    // The shared base: every team lists and uses it; only the default team deletes it.
    assert.deepEqual((await call(b, 'GET', '/v1/templates')).body.templates.map((t: { name: string; team: string }) => [t.name, t.team]), [['base', 'default']]);
    assert.equal((await call(b, 'POST', '/v1/sandboxes', { template: 'base' })).status, 201);
    assert.equal((await call(b, 'DELETE', '/v1/templates/base')).body.error.code, 'FORBIDDEN');
    const baseImage = (await call(b, 'GET', '/v1/snapshots')).body.snapshots.find((s: { kind: string }) => s.kind === 'template');
    assert.equal(baseImage?.team, 'default', "the shared template's image is listed for every team");
    assert.equal((await call(b, 'DELETE', `/v1/snapshots/${baseImage.id}`)).body.error.code, 'FORBIDDEN');
    // A team's own template: only it sees and uses it (by name or id).
    const base = await bed.world.store.findTemplateByName('base', 'default');
    assert.ok(base);
    await bed.world.store.putTemplate({ ...base, id: 'tpl_private', teamId: 'team-a', name: 'private' });
    assert.equal((await call(b, 'POST', '/v1/sandboxes', { template: 'private' })).body.error.code, 'TEMPLATE_NOT_FOUND');
    assert.equal((await call(b, 'POST', '/v1/sandboxes', { template: 'tpl_private' })).body.error.code, 'TEMPLATE_NOT_FOUND');
    assert.equal((await call(b, 'DELETE', '/v1/templates/tpl_private')).body.error.code, 'TEMPLATE_NOT_FOUND');
    assert.equal((await call(a, 'POST', '/v1/sandboxes', { template: 'private' })).status, 201);

    const pub = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@laptop';
    const keyA = (await call(a, 'POST', '/v1/ssh-keys', { publicKey: pub })).body;
    assert.equal(keyA.team, 'team-a');
    assert.deepEqual((await call(b, 'GET', '/v1/ssh-keys')).body.keys, []);
    assert.equal((await call(b, 'DELETE', `/v1/ssh-keys/${keyA.id}`)).body.error.code, 'SSH_KEY_NOT_FOUND');
    assert.equal((await call(b, 'POST', '/v1/ssh-keys', { publicKey: pub })).status, 201, 'another team may register the same key for its own sandboxes');
    assert.equal((await call(a, 'GET', '/v1/ssh-keys')).body.keys.length, 1);
  });

  test('quota: the maxRunning+1st create is 429 QUOTA_EXCEEDED naming the limit, and creates nothing', async () => {
    const a = await teamWithKey('team-a');
    assert.equal((await call(bed.auth, 'PATCH', '/v1/teams/team-a', { quota: { maxRunning: 2, maxForksPerCall: 1 } })).status, 200);
    const first = (await call(a, 'POST', '/v1/sandboxes', {})).body;
    await call(a, 'POST', '/v1/sandboxes', {});
    const refused = await call(a, 'POST', '/v1/sandboxes', {});
    assert.deepEqual([refused.status, refused.body.error.code, refused.body.error.details.limit, refused.body.error.details.max], [429, 'QUOTA_EXCEEDED', 'maxRunning', 2]);
    assert.match(refused.body.error.message, /maxRunning/);
    assert.equal((await call(a, 'GET', '/v1/sandboxes?state=creating,running,error,killed')).body.sandboxes.length, 2, 'nothing was created');
    assert.equal((await call(a, 'POST', `/v1/sandboxes/${first.id}/fork`, { count: 2 })).body.error.details.limit, 'maxForksPerCall');
    const team = (await call(a, 'GET', '/v1/teams/team-a')).body;
    assert.deepEqual(team.usage, { running: 2, memoryMB: 1024 });
    assert.equal((await call(bed.auth, 'POST', '/v1/sandboxes', {})).status, 201, "the default team's room is its own");
  });

  test("MCP with a member key: the tools see the key's team only (another team's sandbox is SANDBOX_NOT_FOUND)", async () => {
    const a = await teamWithKey('team-a');
    const b = await teamWithKey('team-b');
    const sbx = (await call(a, 'POST', '/v1/sandboxes', {})).body;
    const url = await bed.app.listen({ host: '127.0.0.1', port: 0 });
    const client = new Client({ name: 'teams-test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: b } }));
    try {
      const listed = await client.callTool({ name: 'sandbox_list', arguments: {} });
      assert.deepEqual((listed.structuredContent as { sandboxes: unknown[] }).sandboxes, []);
      for (const [name, args] of [['sandbox_get', {}], ['command_run', { command: 'true' }], ['files_read', { path: '/root/hello.txt' }], ['sandbox_fork', { count: 1, confirm: true }]] as const) {
        const res = await client.callTool({ name, arguments: { sandboxId: sbx.id, ...args } });
        assert.equal(res.isError, true, name);
        assert.equal((res.structuredContent as { error: { code: string } }).error.code, 'SANDBOX_NOT_FOUND', name);
      }
      const made = await client.callTool({ name: 'sandbox_create', arguments: {} });
      assert.equal(made.isError, undefined, JSON.stringify(made));
      assert.equal((await bed.world.store.getSandbox((made.structuredContent as { sandboxId: string }).sandboxId))?.teamId, 'team-b', "its sandboxes are the key's team's");
    } finally {
      await client.close();
    }
  });

  test('the OpenAPI document has the team and key routes and the 429 code', async () => {
    const doc = (await bed.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json();
    for (const [path, method] of [['/v1/teams', 'post'], ['/v1/teams', 'get'], ['/v1/teams/{team}', 'patch'], ['/v1/keys', 'post'], ['/v1/keys', 'get'], ['/v1/keys/{keyId}', 'delete']]) {
      assert.ok(doc.paths[path]?.[method], `${method} ${path}`);
    }
    assert.deepEqual(doc.paths['/v1/keys'].post.requestBody.content['application/json'].schema.properties.role.enum, ['admin', 'member']);
    assert.ok(doc.components.schemas.Error.properties.error.properties.code.enum.includes('QUOTA_EXCEEDED'));
  });

  test('every route naming an id is scoped: a route the scope does not know fails at start-up', () => {
    for (const r of Object.values(ROUTES)) assert.doesNotThrow(() => scopeOf(r.path, r.auth !== 'public'), r.path);
    assert.throws(() => scopeOf('/v1/networks/:id', true), /nothing scopes it/);
    assert.equal(scopeOf('/v1/sandboxes/:id/files', true), 'sandbox');
  });
});
