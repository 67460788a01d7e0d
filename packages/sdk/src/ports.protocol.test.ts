/**
 * Protocol tests of the SDK's port, auto-pause and ingress-log calls against the in-test contract fixture:
 * request shapes, getHost/getUrl from the create's info, and error mapping.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startContractServer, type ContractServer } from './testing/contract-server.js';
import { Sandbox, SandboxNotFoundError } from './index.js';

let server: ContractServer;
const conn = () => ({ apiUrl: server.url, apiKey: server.apiKey });

before(async () => { server = await startContractServer(); });
after(async () => { await server.close(); });

describe('protocol: ports, auto-pause, ingress log', () => {
  test('create with ports and autoPause; getHost/getUrl; expose, getPortUrl, unexpose', async () => {
    const sbx = await Sandbox.create({ ...conn(), ports: [3000], autoPause: { idleMs: 600_000 } });
    const created = server.requests.find((r) => r.method === 'POST' && r.path === '/v1/sandboxes');
    assert.ok(created);
    assert.deepEqual((await sbx.getInfo()).autoPause, { idleMs: 600_000 });
    assert.equal(sbx.getHost(3000), `3000-${sbx.sandboxId.toLowerCase()}.localhost:7424`);
    assert.equal(sbx.getUrl(3000), `http://3000-${sbx.sandboxId.toLowerCase()}.localhost:7424/`);
    const exposed = await sbx.expose(8080, { access: 'public' });
    assert.deepEqual([exposed.port, exposed.access], [8080, 'public']);
    assert.equal((await sbx.getPortUrl(8080)).token, undefined, 'a public port has no token');
    assert.match((await sbx.getPortUrl(3000)).token ?? '', /^rit_/);
    await sbx.unexpose(8080);
    await assert.rejects(sbx.getPortUrl(8080), { code: 'PORT_NOT_EXPOSED' });
    await assert.rejects(sbx.expose(0), { code: 'VALIDATION_FAILED' });
  });

  test('setAutoPause live and off; a bad idleMs is VALIDATION_FAILED; getIngressLog sends the limit', async () => {
    const sbx = await Sandbox.create(conn());
    assert.deepEqual((await sbx.setAutoPause({ idleMs: 60_000 })).autoPause, { idleMs: 60_000 });
    const put = server.requests.filter((r) => r.method === 'PUT').at(-1);
    assert.equal(put?.path, `/v1/sandboxes/${sbx.sandboxId}/auto-pause`);
    assert.equal((await sbx.setAutoPause(null)).autoPause, null);
    await assert.rejects(sbx.setAutoPause({ idleMs: 5 }), { code: 'VALIDATION_FAILED' });
    assert.deepEqual(await sbx.getIngressLog({ limit: 7 }), { entries: [], wakeups: 0, lastWakeAt: null });
    assert.equal(server.requests.filter((r) => r.path.endsWith('/ingress/log')).at(-1)?.query.limit, '7');
    await sbx.kill();
    await assert.rejects(sbx.getIngressLog(), SandboxNotFoundError);
  });
});
