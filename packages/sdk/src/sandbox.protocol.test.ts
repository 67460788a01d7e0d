/**
 * Protocol tests: the SDK's control-plane calls against the in-test contract fixture (node:http + ws).
 * They check request shapes, response handling and error mapping; they do not cover a runtime.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startContractServer, type ContractServer } from './testing/contract-server.js';
import {
  AuthenticationError, ConnectionError, InvalidStateError, NotFoundError, RamifyError, Sandbox, SandboxNotFoundError,
  deleteSnapshot, getHealth, listSnapshots,
} from './index.js';

let server: ContractServer;
const conn = () => ({ apiUrl: server.url, apiKey: server.apiKey });

before(async () => { server = await startContractServer(); });
after(async () => { await server.close(); });

describe('protocol: sandbox lifecycle', () => {
  test('create sends the options and defaults the template to base', async () => {
    const sbx = await Sandbox.create({ ...conn(), metadata: { job: 'a' }, timeoutMs: 1000, cpuCount: 2 });
    assert.match(sbx.sandboxId, /^sbx_/);
    const info = await sbx.getInfo();
    assert.equal(info.state, 'running');
    assert.equal(info.cpuCount, 2);
    assert.deepEqual(info.metadata, { job: 'a' });
    assert.equal(info.templateId, 'tpl_base');
    assert.equal(await sbx.isRunning(), true);
  });

  test('create takes the template first, as E2B\'s SDK does', async () => {
    const sbx = await Sandbox.create('base', { ...conn(), cpuCount: 2 });
    const info = await sbx.getInfo();
    assert.equal(info.templateId, 'tpl_base');
    assert.equal(info.cpuCount, 2);
  });

  test('pause, resume, connect (auto-resume), setTimeout, snapshot, fork, kill', async () => {
    const sbx = await Sandbox.create(conn());
    assert.equal((await sbx.pause()).state, 'paused');
    assert.equal(await sbx.isRunning(), false);
    await assert.rejects(sbx.pause(), (e: unknown) => e instanceof InvalidStateError && e.code === 'INVALID_STATE');
    const again = await Sandbox.connect(sbx.sandboxId, conn());
    assert.equal((await again.getInfo()).state, 'running');
    assert.equal((await sbx.setTimeout(5000)).timeoutMs, 5000);
    const snap = await sbx.snapshot({ name: 'point-a' });
    assert.equal(snap.name, 'point-a');
    assert.ok((await listSnapshots(conn())).some((s) => s.id === snap.id));
    await deleteSnapshot(snap.id, conn());
    await assert.rejects(deleteSnapshot(snap.id, conn()), (e: unknown) => e instanceof NotFoundError && e.code === 'SNAPSHOT_NOT_FOUND');
    const forks = await sbx.fork({ count: 3 });
    assert.equal(forks.length, 3);
    for (const f of forks) assert.equal((await f.getInfo()).parentId, sbx.sandboxId);
    await sbx.kill();
    assert.equal((await Sandbox.getInfo(sbx.sandboxId, conn())).state, 'killed');
    await assert.rejects(Sandbox.connect(sbx.sandboxId, conn()), InvalidStateError);
    assert.equal(await Sandbox.kill(forks[0].sandboxId, conn()), true);
    assert.equal(await Sandbox.kill('sbx_missing', conn()), false);
  });

  test('list filters by state and metadata and paginates', async () => {
    const tag = { suite: `list-${Date.now()}` };
    const created = await Promise.all(Array.from({ length: 5 }, () => Sandbox.create({ ...conn(), metadata: tag })));
    await created[0].pause();
    const pager = Sandbox.list({ ...conn(), metadata: tag, limit: 2 });
    assert.equal(pager.hasNext, true);
    const first = await pager.nextItems();
    assert.equal(first.length, 2);
    assert.equal(typeof pager.nextToken, 'string');
    const ids: string[] = first.map((i) => i.id);
    for await (const info of pager) ids.push(info.id);
    assert.deepEqual(ids.sort(), created.map((s) => s.sandboxId).sort());
    assert.equal(pager.hasNext, false);
    const paused = [];
    for await (const info of Sandbox.list({ ...conn(), metadata: tag, state: ['paused'] })) paused.push(info.id);
    assert.deepEqual(paused, [created[0].sandboxId]);
    const q = server.requests.filter((r) => r.path === '/v1/sandboxes' && r.method === 'GET').at(-1);
    assert.equal(q?.query.state, 'paused');
    assert.equal(new URLSearchParams(q?.query.metadata).get('suite'), tag.suite);
  });
});

describe('protocol: error mapping', () => {
  test('error bodies become typed errors with the code and message', async () => {
    await assert.rejects(Sandbox.getInfo('sbx_nope', conn()), (e: unknown) => {
      assert.ok(e instanceof SandboxNotFoundError);
      assert.ok(e instanceof RamifyError);
      assert.equal(e.code, 'SANDBOX_NOT_FOUND');
      assert.match(e.message, /sbx_nope/);
      return true;
    });
    await assert.rejects(Sandbox.create({ ...conn(), template: 'nope' }), (e: unknown) => e instanceof NotFoundError && e.code === 'TEMPLATE_NOT_FOUND');
  });

  test('a wrong or missing key is an AuthenticationError; health needs no key', async () => {
    await assert.rejects(Sandbox.getInfo('x', { apiUrl: server.url, apiKey: 'rmf_wrong' }), AuthenticationError);
    const env = process.env.RAMIFY_API_KEY;
    delete process.env.RAMIFY_API_KEY;
    try {
      await assert.rejects(Sandbox.create({ apiUrl: server.url, apiKey: '' }), (e: unknown) => e instanceof AuthenticationError && /no API key configured/.test(e.message));
    } finally { if (env !== undefined) process.env.RAMIFY_API_KEY = env; }
    assert.equal((await getHealth({ apiUrl: server.url })).ok, true);
  });

  test('an unreachable API is a ConnectionError naming the URL', async () => {
    const dead = await startContractServer();
    const url = dead.url;
    await dead.close();
    await assert.rejects(Sandbox.create({ apiUrl: url, apiKey: 'k' }), (e: unknown) => {
      assert.ok(e instanceof ConnectionError);
      assert.equal(e.code, 'API_UNREACHABLE');
      assert.ok(e.message.includes(url), e.message);
      return true;
    });
  });
});
