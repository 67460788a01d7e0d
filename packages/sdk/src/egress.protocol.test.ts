/**
 * Protocol tests of the SDK's egress calls against the in-test contract fixture: request shapes and
 * error mapping (the fixture does not normalise or enforce rules; the daemon's tests cover that).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startContractServer, type ContractServer } from './testing/contract-server.js';
import { RamifyError, Sandbox, SandboxNotFoundError } from './index.js';

let server: ContractServer;
const conn = () => ({ apiUrl: server.url, apiKey: server.apiKey });

before(async () => { server = await startContractServer(); });
after(async () => { await server.close(); });

describe('protocol: egress', () => {
  test('create sends egress; getEgress, setEgress and getEgressLog follow the route table', async () => {
    const sbx = await Sandbox.create({ ...conn(), egress: ['pypi.org', '10.0.0.0/8'] });
    assert.deepEqual((await sbx.getEgress()).rules, ['pypi.org', '10.0.0.0/8']);
    const set = await sbx.setEgress(['example.com:443']);
    assert.deepEqual(set.rules, ['example.com:443']);
    assert.equal(set.mode, 'allowlist');
    const put = server.requests.filter((r) => r.method === 'PUT').at(-1);
    assert.equal(put?.path, `/v1/sandboxes/${sbx.sandboxId}/egress`);
    assert.equal((await sbx.setEgress([])).mode, 'open');
    assert.deepEqual(await sbx.getEgressLog({ limit: 5 }), []);
    const log = server.requests.filter((r) => r.path.endsWith('/egress/log')).at(-1);
    assert.equal(log?.query.limit, '5');
    const [child] = await sbx.fork({ count: 1 });
    assert.equal((await child.getEgress()).mode, 'open');
  });

  test("deny-all: create and setEgress take { mode: 'deny-all' }; a sandbox made from a snapshot gets the policy the snapshot recorded", async () => {
    const sbx = await Sandbox.create({ ...conn(), egress: { mode: 'deny-all' } });
    assert.deepEqual(server.state.get(sbx.sandboxId).egress?.mode, 'deny-all', 'the create body carried the mode');
    assert.deepEqual(await sbx.getEgress().then((p) => [p.mode, p.rules]), ['deny-all', []]);
    const snap = await sbx.snapshot({ name: 'sealed-sdk' });
    assert.deepEqual(snap.egress, { mode: 'deny-all', rules: [] });
    const fromSnap = await Sandbox.create({ ...conn(), snapshot: 'sealed-sdk' });
    assert.equal((await fromSnap.getEgress()).mode, 'deny-all');

    assert.deepEqual(await sbx.setEgress(['pypi.org']).then((p) => [p.mode, p.rules]), ['allowlist', ['pypi.org']]);
    assert.deepEqual(await sbx.setEgress({ mode: 'deny-all' }).then((p) => [p.mode, p.rules]), ['deny-all', []]);
    await assert.rejects(sbx.setEgress({ mode: 'deny-all', rules: ['pypi.org'] }), { code: 'VALIDATION_FAILED' });
  });

  test('a refused rule is a RamifyError VALIDATION_FAILED carrying the rule; a killed sandbox is not found', async () => {
    const sbx = await Sandbox.create(conn());
    await assert.rejects(sbx.setEgress(['ok.example.com', '*.com']), (err: unknown) => {
      assert.ok(err instanceof RamifyError);
      assert.equal(err.code, 'VALIDATION_FAILED');
      assert.match(err.message, /egress rule 2 '\*\.com'/);
      assert.equal(err.details?.rule, '*.com');
      return true;
    });
    await sbx.kill();
    await assert.rejects(sbx.getEgress(), SandboxNotFoundError);
  });
});
