/**
 * The route table (contracts' `ROUTES`) against what the daemon serves, in-process over core's FAKE
 * runtime: every route of the table is mounted and in the OpenAPI document with its operation id and
 * table fields, and nothing is mounted or documented that the table lacks; every route but the public ones
 * refuses a call without a key (401); `admin` routes refuse a member key and `operator` routes another
 * team's admin key (403), while `key` routes do not refuse a member key for its role.
 */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { ROUTES, routePath, type OperationId, type RouteDef } from '@ramify/contracts';
import { callApp, httpTestBed, teamWithKey, type HttpTestBed } from './test-support.js';

let bed: HttpTestBed;
beforeEach(async () => {
  bed = await httpTestBed();
});
afterEach(async () => {
  await bed.dispose();
});

const TABLE = Object.entries(ROUTES) as Array<[OperationId, RouteDef]>;
/** `/mcp` answers GET and DELETE itself with 405 (no sessions): the endpoint's own refusals, not operations. */
const MCP_REFUSALS = new Set(['GET /mcp', 'DELETE /mcp']);

/** Every `METHOD path` Fastify has mounted (HEAD twins of GETs left out), read from its route tree. */
function mountedRoutes(tree: string): Set<string> {
  const mounted = new Set<string>();
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const found = /^([│ ]*)[├└]── (\S+) \(([A-Z, ]+)\)$/.exec(line);
    if (!found) continue;
    const depth = found[1]!.length / 4;
    stack.length = depth;
    stack.push(found[2]!);
    for (const method of found[3]!.split(', ')) if (method !== 'HEAD') mounted.add(`${method} ${stack.join('')}`);
  }
  return mounted;
}

/** A concrete path of `def` (placeholder ids: the calls below are refused before any lookup matters). */
const pathOf = (def: RouteDef): string =>
  routePath(def, Object.fromEntries([...def.path.matchAll(/:([A-Za-z]+)/g)].map((m) => [m[1]!, m[1] === 'pid' || m[1] === 'port' ? 8080 : `x-${m[1]}`])) as never);

test('the daemon mounts exactly the routes of the table', () => {
  const mounted = mountedRoutes(bed.app.printRoutes({ commonPrefix: false }));
  const table = new Set(TABLE.map(([, r]) => `${r.method} ${r.path}`));
  assert.ok(mounted.size >= table.size, `read ${mounted.size} mounted routes from Fastify's tree`);
  assert.deepEqual([...table].filter((r) => !mounted.has(r)), [], 'in the table, not mounted');
  assert.deepEqual([...mounted].filter((r) => !table.has(r) && !MCP_REFUSALS.has(r)), [], 'mounted, not in the table');
});

test('the OpenAPI document has exactly the routes of the table, each with its operation id and table fields', async () => {
  const doc = (await callApp(bed, {}, 'GET', '/v1/openapi.json')).body as { paths: Record<string, Record<string, Record<string, unknown>>> };
  const documented = new Map<string, Record<string, unknown>>();
  for (const [path, ops] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(ops)) documented.set(`${method.toUpperCase()} ${path}`, op);
  for (const [id, r] of TABLE) {
    const key = `${r.method} ${r.path.replace(/:([A-Za-z]+)/g, '{$1}')}`;
    const op = documented.get(key);
    assert.ok(op, `${id} (${key}) is not documented`);
    documented.delete(key);
    assert.equal(op.operationId, id, key);
    assert.equal(op['x-ramify-auth'], r.auth, key);
    assert.equal(op['x-ramify-target'], r.target, key);
    assert.equal(op['x-ramify-transport'], r.transport, key);
    assert.equal(op['x-ramify-action'], r.action, key);
    assert.deepEqual(op.security, r.auth === 'public' ? [] : undefined, `${key}: only public routes drop the bearer requirement`);
  }
  assert.deepEqual([...documented.keys()], [], 'documented, not in the table');
});

test('every route but the public ones refuses a call without a key (401), WebSockets and /mcp included', async () => {
  for (const [id, r] of TABLE) {
    const res = await callApp(bed, {}, r.method, pathOf(r), r.method === 'GET' || r.method === 'DELETE' ? undefined : {});
    if (r.auth === 'public') assert.notEqual(res.status, 401, id);
    else assert.equal(res.status, 401, `${id} without a key`);
  }
});

test('roles are as the table says: admin routes refuse a member key, operator routes another team\'s admin key; key routes refuse no one for their role', async () => {
  const member = await teamWithKey(bed, 'acme', 'member');
  const otherAdmin = await teamWithKey(bed, 'beta', 'admin');
  // Bodies that pass validation, so that the role is what decides.
  const bodies: Partial<Record<OperationId, unknown>> = {
    createWebhook: { url: 'http://127.0.0.1:9/hook' }, createApiKey: {}, createTeam: { id: 'gamma' }, setTeamQuota: { quota: {} },
  };
  for (const [id, r] of TABLE) {
    if (r.transport === 'websocket' || r.auth === 'public' || id === 'mcp') continue;
    const body = bodies[id] ?? (r.method === 'GET' || r.method === 'DELETE' ? undefined : {});
    const asMember = await callApp(bed, member, r.method, pathOf(r), body);
    const asOtherAdmin = await callApp(bed, otherAdmin, r.method, pathOf(r), body);
    const refused = (res: { status: number; body: { error?: { code?: string; message?: string } } }): boolean =>
      res.status === 403 && res.body.error?.code === 'FORBIDDEN' && /admin API key/.test(res.body.error.message ?? '');
    if (r.auth === 'admin') {
      assert.ok(refused(asMember), `${id}: a member key is refused (${asMember.status})`);
      assert.ok(!refused(asOtherAdmin), `${id}: an admin key of its team is not refused for its role`);
    } else if (r.auth === 'operator') {
      assert.ok(refused(asMember), `${id}: a member key is refused (${asMember.status})`);
      assert.ok(refused(asOtherAdmin), `${id}: another team's admin key is refused (${asOtherAdmin.status})`);
    } else {
      assert.ok(!refused(asMember), `${id}: a member key is not refused for its role (${asMember.status} ${JSON.stringify(asMember.body)})`);
    }
  }
});
