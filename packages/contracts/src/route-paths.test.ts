/** The route table as data: well-formed entries, paths filled and matched back for every route. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { matchRoute, routePath } from './route-paths.js';
import { ROUTES, type OperationId, type RouteDef } from './routes.js';

const entries = Object.entries(ROUTES) as Array<[OperationId, RouteDef]>;

test('one route per method and path; every mutating route but the MCP endpoint and every stream that starts something names its audit action, reads none', () => {
  const seen = new Set<string>();
  for (const [id, r] of entries) {
    const key = `${r.method} ${r.path}`;
    assert.ok(!seen.has(key), `${key} is in the table twice`);
    seen.add(key);
    assert.match(r.path, /^\/(v1\/|metrics$|mcp$)/, id);
    const reads = r.method === 'GET' && r.transport !== 'websocket';
    if (reads) assert.equal(r.action, undefined, `${id} is a read: no audit action`);
    else if (r.transport === 'websocket') assert.equal(r.action === undefined, id === 'streamProcess' || id === 'streamEvents', `${id}: a stream that starts something is audited`);
    else if (id !== 'mcp') assert.ok(r.action, `${id} mutates: it needs an audit action`);
    if (r.transport === 'websocket') assert.equal(r.method, 'GET', `${id}: a WebSocket upgrade is a GET`);
    if (r.target === 'sandbox-host') assert.ok(r.path.startsWith('/v1/sandboxes/:id'), `${id} runs on a sandbox's host: its path must name the sandbox`);
  }
  assert.ok(entries.length >= 80, `${entries.length} routes`);
});

test('every route: its path filled with parameters matches back to the same route and parameters', () => {
  for (const [id, r] of entries) {
    const names = [...r.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]!);
    const params = Object.fromEntries(names.map((n) => [n, n === 'pid' || n === 'port' ? '42' : `${n} x/y`]));
    const path = routePath(r, params as never);
    assert.ok(!path.includes(':'), path);
    const match = matchRoute(r.method, path);
    assert.equal(match?.operationId, id, `${r.method} ${path}`);
    assert.deepEqual(match?.params, params);
  }
});

test('paths are encoded; HEAD matches GET; unknown paths and methods match nothing', () => {
  assert.equal(routePath(ROUTES.pauseSandbox, { id: 'sbx_1' }), '/v1/sandboxes/sbx_1/pause');
  assert.equal(routePath(ROUTES.deleteTemplate, { id: 'my tpl/1' }), '/v1/templates/my%20tpl%2F1');
  assert.equal(routePath(ROUTES.signalProcess, { id: 'sbx_1', pid: 7 }), '/v1/sandboxes/sbx_1/processes/7/signal');
  assert.equal(matchRoute('HEAD', '/v1/sandboxes/sbx_1')?.operationId, 'getSandbox');
  assert.equal(matchRoute('GET', '/v1/sandboxes/sbx_1/files/watch')?.operationId, 'watchDir');
  assert.deepEqual(matchRoute('DELETE', '/v1/sandboxes/sbx_1/files/watch/w1')?.params, { id: 'sbx_1', watchId: 'w1' });
  assert.equal(matchRoute('POST', '/v1/sandboxes/sbx_1'), null);
  assert.equal(matchRoute('GET', '/v1/nothing'), null);
  assert.equal(matchRoute('GET', '/v1/sandboxes/%E0%A4%A'), null, 'a parameter that does not decode');
  assert.throws(() => routePath(ROUTES.pauseSandbox, {} as never), /needs parameter 'id'/);
});
