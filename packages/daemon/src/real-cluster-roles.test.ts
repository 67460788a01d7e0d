/**
 * The API/host split of issue 16 on a real cluster on one machine (harness: `testing/cluster.ts`):
 * Postgres and s3rver on a bridge, three `ramify serve --role host` processes, each in its own network
 * namespace with its own address, data directory and runsc state, and `ramify serve --role api` processes
 * in the root namespace; clients talk to the API only. REAL gVisor, namespaces, nftables.
 * Shown: creates spread over the hosts; a fork lands on its parent's host; `kill -9` of a host agent
 * marks its running sandboxes lost (HOST_LOST, also at the API's ingress edge) and leaves its uploaded paused
 * ones resumable elsewhere (one is woken on another host by a port URL request at the edge);
 * an API process restart loses nothing; two API processes racing creates never place one twice (each
 * sandbox runs under exactly one host's runsc state, the one recorded). Pause on A, A stopped, resume on
 * B: `real-cluster.test.ts`, which goes through the API here too.
 * Long (a cluster, a lease expiry): `npm run test:full` only. Skipped, with the reason, before `--role`
 * exists, when not root, without runsc, Postgres or the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ingressTestKit } from './real-ingress-support.js';
import { shellCaller, until, type ApiReply } from './real-test-support.js';
import { clusterSkip, detectClusterMode, sandboxesRunningOn, startCluster, type Cluster, type ClusterHost } from './testing/cluster.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;

async function rolesSkip(): Promise<string | false> {
  if (process.env.RAMIFY_TEST_FULL !== '1') return 'long (a three-host cluster, a host lease expiring): runs in npm run test:full (RAMIFY_TEST_FULL=1)';
  if (detectClusterMode() !== 'roles') return "ramify serve has no --role/--advertise-url yet (the API/host split of issue 16)";
  return clusterSkip(rootfs);
}

const skip = await rolesSkip();
let cluster: Cluster;
const api = (index = 0): ((method: string, path: string, body?: unknown) => Promise<ApiReply>) => cluster.callAt(() => cluster.apis[index]?.url ?? '');

async function create(body: Record<string, unknown> = {}, index = 0): Promise<string> {
  const r = await api(index)('POST', '/v1/sandboxes', { timeoutMs: 600_000, ...body });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  return r.json.id as string;
}

const hostNamed = (hostId: string | null): ClusterHost => {
  const host = cluster.hosts.find((h) => h.hostId === hostId);
  assert.ok(host, `a host of the cluster holds it (${hostId})`);
  return host;
};

/** Kill every sandbox through the API (each case cleans up after itself). */
async function killAll(ids: string[]): Promise<void> {
  await Promise.all(ids.map((id) => api()('DELETE', `/v1/sandboxes/${id}`)));
}

describe('the API/host split on a real three-host cluster', { skip, timeout: 1_800_000 }, () => {
  before(async () => {
    cluster = await startCluster({ prefix: 'rcr', hosts: 3, mode: 'roles', rootfs: rootfs as string });
  });
  after(async () => {
    await cluster?.close();
    if (cluster) assert.deepEqual(cluster.leftovers(), []);
  });

  test('creates spread over the hosts, each running where it is recorded', async () => {
    const ids: string[] = [];
    for (let k = 0; k < 6; k++) ids.push(await create({ memoryMB: 256 }));
    const holders = await Promise.all(ids.map((id) => cluster.hostOf(id)));
    assert.deepEqual(new Set(holders), new Set(cluster.hosts.map((h) => h.hostId)), `every host got creates: ${holders.join(', ')}`);
    for (const [k, id] of ids.entries()) assert.ok(sandboxesRunningOn(hostNamed(holders[k]!)).includes(id), `${id} runs on ${holders[k]}`);
    await killAll(ids);
  });

  test('a fork lands on its parent\'s host', async () => {
    const parent = await create();
    await shellCaller(api())(parent, 'echo from-parent > /root/mark');
    const forked = await api()('POST', `/v1/sandboxes/${parent}/fork`, { count: 2 });
    assert.equal(forked.status, 201, JSON.stringify(forked.json));
    const children = (forked.json.sandboxes as Array<{ id: string }>).map((s) => s.id);
    const home = await cluster.hostOf(parent);
    for (const child of children) {
      assert.equal(await cluster.hostOf(child), home);
      assert.ok(sandboxesRunningOn(hostNamed(home)).includes(child));
      assert.equal((await shellCaller(api())(child, 'cat /root/mark')).trim(), 'from-parent');
    }
    await killAll([parent, ...children]);
  });

  test('kill -9 of a host agent: its running sandboxes are marked lost, its uploaded paused ones resume elsewhere', async () => {
    // A server on a public port; the fork (paused below) has it too, and is woken through the API's ingress edge.
    const kit = ingressTestKit(() => ({ url: cluster.apis[0]?.url ?? '', key: cluster.apiKey, ingressPort: cluster.edgePort }));
    const running = await kit.serving({ ports: [{ port: 8000, access: 'public' }] }, 8000);
    const portHost = (id: string): string => `8000-${id.toLowerCase()}.localhost`;
    const forked = await api()('POST', `/v1/sandboxes/${running}/fork`, { count: 1 });
    assert.equal(forked.status, 201, JSON.stringify(forked.json));
    const paused = forked.json.sandboxes[0].id as string; // on the same host: a fork lands on its parent's
    await shellCaller(api())(paused, 'echo kept > /root/kept.txt');
    assert.equal((await api()('POST', `/v1/sandboxes/${paused}/pause`)).status, 200);
    await cluster.durablePausedImage(paused);
    const lost = hostNamed(await cluster.hostOf(running));
    await lost.daemon!.kill9();

    await until(async () => (await api()('GET', `/v1/sandboxes/${running}`)).json?.state === 'error', 'the running sandbox is marked lost', 180_000);
    assert.match(JSON.stringify((await api()('GET', `/v1/sandboxes/${running}`)).json), /HOST_LOST/);
    const gone = await kit.ingress(portHost(running), '/index.html');
    assert.equal(gone.status, 409, gone.body);
    assert.equal(JSON.parse(gone.body).error.code, 'HOST_LOST');
    // A request at the edge places the paused fork on another host, whose ingress resumes it from S3.
    const woken = await kit.ingress(portHost(paused), '/index.html');
    assert.equal(woken.status, 200, woken.body);
    assert.equal(woken.body, 'hello from the sandbox\n');
    assert.notEqual(await cluster.hostOf(paused), lost.hostId);
    assert.equal((await api()('GET', `/v1/sandboxes/${paused}`)).json.state, 'running');
    assert.equal((await shellCaller(api())(paused, 'cat /root/kept.txt')).trim(), 'kept');
    await cluster.startHost(lost.index); // it returns, reconciles, and takes work again
    await killAll([running, paused]);
  });

  test('an API process restart loses nothing', async () => {
    const ids = [await create(), await create()];
    await shellCaller(api())(ids[0]!, 'echo before > /root/f');
    const listed = async (): Promise<string[]> => ((await api()('GET', '/v1/sandboxes')).json.sandboxes as Array<{ id: string }>).map((s) => s.id).sort();
    const before = await listed();
    await cluster.apis[0]!.stop();
    await cluster.startApi(0);
    assert.deepEqual(await listed(), before);
    assert.equal((await shellCaller(api())(ids[0]!, 'cat /root/f')).trim(), 'before');
    await killAll(ids);
  });

  test('two API processes racing creates never place one twice', async () => {
    await cluster.startApi(1);
    const ids = await Promise.all(Array.from({ length: 8 }, (_, k) => create({ memoryMB: 256 }, k % 2)));
    assert.equal(new Set(ids).size, 8);
    const running = cluster.hosts.map((h) => sandboxesRunningOn(h));
    for (const id of ids) {
      const on = cluster.hosts.filter((_, k) => running[k]!.includes(id)).map((h) => h.hostId);
      assert.deepEqual(on, [await cluster.hostOf(id)], `${id} runs on exactly the host recorded`);
    }
    await killAll(ids);
  });
});
