/**
 * A real multi-host Ramify on one machine (issue 16; harness in `testing/cluster.ts`): Postgres and
 * s3rver on a bridge, template `base` seeded into both, three `ramify serve` processes (the CLI), each in
 * its own network namespace with its own address, data directory, runsc state, network prefix and host
 * id, sharing nothing but Postgres and S3. REAL gVisor, namespaces, nftables.
 * Shown here: each host creates, pauses and resumes its own sandboxes with nothing colliding (slots,
 * slot namespaces, nftables tables); a sandbox paused on host 1, host 1 then stopped, resumes on host 2
 * with memory, processes and files intact (a counter keeps counting); port URLs of a sandbox on a host
 * answer at the API process's ingress edge (roles: HTTP, a WebSocket, the token check, a wake, a kill,
 * each answered as the host's own ingress answers); with roles, SSH through the API process's relay
 * reaches each sandbox on its host; teardown leaves nothing behind.
 * Before the API/host split (`--role`) lands, hosts run as plain daemons on the shared database and the
 * test talks to a host's API directly; with it, through the API process. The split's own cases are in
 * `real-cluster-roles.test.ts`. Skipped, with the reason, when not root, without runsc, Postgres or the
 * prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import { ingressTestKit, type IngressReply } from './real-ingress-support.js';
import { WS_SERVER_PY } from './real-ingress-servers.js';
import { run, sshOptions } from './real-ssh-support.js';
import { shellCaller, until } from './real-test-support.js';
import { clusterSkip, detectClusterMode, sandboxesRunningOn, startCluster, type Cluster, type ClusterHost } from './testing/cluster.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const PREFIX = 'rcx';

const skip = await clusterSkip(rootfs);
const mode = detectClusterMode();
let cluster: Cluster;

/** `call` and `sh` through the host itself (plain daemons) or the API process (roles). */
function clientFor(host: ClusterHost): { call: ReturnType<Cluster['callAt']>; sh: (id: string, cmd: string) => Promise<string> } {
  const call = cluster.callAt(() => (mode === 'roles' ? cluster.entryUrl() : host.url));
  return { call, sh: shellCaller(call) };
}

const COUNTER = `printf '%s\\n' 'echo $$ > /tmp/counter.pid; i=0; while true; do i=$((i+1)); echo $i > /tmp/count.new; mv /tmp/count.new /tmp/count; sleep 0.1; done' > /root/counter.sh`;

/** A running sandbox on `host` with a counter process and a file of random bytes (its checksum beside it). */
async function busySandbox(host: ClusterHost): Promise<string> {
  const { call, sh } = clientFor(host);
  const created = await call('POST', '/v1/sandboxes', { timeoutMs: 600_000 });
  assert.equal(created.status, 201, JSON.stringify(created.json));
  const id = created.json.id as string;
  await sh(id, COUNTER);
  await call('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'sh /root/counter.sh', background: true });
  await sh(id, 'head -c 2000000 /dev/urandom > /root/data.bin && sha256sum /root/data.bin > /root/data.sum');
  return id;
}

/** The counter's value in `id`, read through `host`'s client. */
const count = async (host: ClusterHost, id: string): Promise<number> => Number((await clientFor(host).sh(id, 'cat /tmp/count')).trim());

/** Memory, processes and files of `id` came back: the counter goes on from where it was, the same process, the same bytes. */
async function assertIntact(host: ClusterHost, id: string, before: { count: number; pid: string }): Promise<void> {
  const { sh } = clientFor(host);
  const now = await count(host, id);
  assert.ok(now >= before.count, `the counter's value came back (${now} >= ${before.count})`);
  await until(async () => (await count(host, id)) > now, 'the counter counts on');
  assert.match(await sh(id, `kill -0 ${before.pid} && echo alive`), /alive/, 'the same process counts on');
  assert.match(await sh(id, 'sha256sum -c /root/data.sum'), /data\.bin: OK/);
}

/** nftables tables in `netns` (null: the root namespace). */
function nftTables(netns: string | null): string[] {
  const argv = netns ? ['ip', 'netns', 'exec', netns, 'nft', 'list', 'tables'] : ['nft', 'list', 'tables'];
  return spawnSync(argv[0] as string, argv.slice(1), { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
}

/** The cluster's host whose id is `hostId`. */
function hostNamed(hostId: string | null): ClusterHost {
  const host = cluster.hosts.find((h) => h.hostId === hostId);
  assert.ok(host, `a host of the cluster holds it (${hostId})`);
  return host;
}

/** `rcxa` of `table inet rcxa`. */
const tableName = (line: string): string => line.split(' ').at(-1) ?? '';

describe(`a multi-host cluster on one machine (${mode} daemons)`, { skip, timeout: 900_000 }, () => {
  before(async () => {
    cluster = await startCluster({ prefix: PREFIX, hosts: 3, mode, rootfs: rootfs as string });
  });
  after(async () => {
    await cluster?.close();
  });

  test('each host creates, pauses and resumes its own sandboxes; slots, namespaces and tables do not collide', async () => {
    // Plain daemons: one create on each host. Roles: three creates through the API, which spreads them.
    const ids = await Promise.all(cluster.hosts.map((host) => busySandbox(host)));
    const holders = await Promise.all(ids.map(async (id) => hostNamed(await cluster.hostOf(id))));
    // Placement spreads them (least loaded of those sampled), not necessarily one per host: real-cluster-roles checks the spread.
    if (mode === 'plain') assert.deepEqual(holders, cluster.hosts, 'each sandbox is recorded on the host that made it');
    else assert.ok(new Set(holders).size >= 2, `placement spread the creates: ${holders.map((h) => h.hostId).join(', ')}`);
    for (const host of cluster.hosts) {
      const mine = ids.filter((_, k) => holders[k] === host);
      assert.deepEqual(sandboxesRunningOn(host).sort(), mine.sort(), `exactly the sandboxes recorded on ${host.hostId} run under its runsc state`);
    }
    for (const host of new Set(holders)) {
      // Slots are per host: each host's first sandbox has slot 1, in namespaces named after its own prefix.
      assert.ok(existsSync(`/run/netns/${host.networkPrefix}-s1`), `${host.hostId}'s slot 1 namespace ${host.networkPrefix}-s1`);
      const tables = nftTables(host.netns);
      assert.ok(tables.some((t) => tableName(t) === host.networkPrefix), `${host.hostId}'s table is in its namespace: ${tables.join(', ')}`);
      for (const other of cluster.hosts.filter((h) => h !== host)) assert.ok(!tables.some((t) => tableName(t).startsWith(other.networkPrefix)), `no table of ${other.hostId} in ${host.netns}`);
    }
    assert.deepEqual(nftTables(null).filter((t) => tableName(t).startsWith(PREFIX)), [], 'no host table in the root namespace');
    if (mode === 'roles') {
      // SSH through the API process's relay reaches each sandbox on its host (at the host's registered SSH address).
      for (const [k, host] of holders.entries()) {
        const user = (await clientFor(host).call('POST', `/v1/sandboxes/${ids[k]}/ssh-access`, {})).json.user as string;
        const r = await run('ssh', [...sshOptions(null), '-p', String(cluster.apiSshPorts[0]), `${user}@127.0.0.1`, 'test -s /root/data.sum && echo relayed']);
        assert.deepEqual([r.code, r.stdout], [0, 'relayed\n'], r.stderr);
      }
    }

    const before = await Promise.all(holders.map(async (host, k) => ({ count: await count(host, ids[k]!), pid: (await clientFor(host).sh(ids[k]!, 'cat /tmp/counter.pid')).trim() })));
    const paused = await Promise.all(holders.map((host, k) => clientFor(host).call('POST', `/v1/sandboxes/${ids[k]}/pause`)));
    for (const r of paused) assert.equal(r.status, 200, JSON.stringify(r.json));
    const resumed = await Promise.all(holders.map((host, k) => clientFor(host).call('POST', `/v1/sandboxes/${ids[k]}/resume`)));
    for (const r of resumed) assert.equal(r.status, 200, JSON.stringify(r.json));
    for (const [k, host] of holders.entries()) {
      await assertIntact(host, ids[k]!, before[k]!);
      assert.equal(await cluster.hostOf(ids[k]!), host.hostId, 'resumed where it was paused (its image is cached there)');
    }
    await Promise.all(holders.map((host, k) => clientFor(host).call('DELETE', `/v1/sandboxes/${ids[k]}`)));
  });

  test('a sandbox paused on host A, A then stopped, resumes on host B with its counter still counting', async () => {
    const id = await busySandbox(cluster.hosts[0]!);
    const a = hostNamed(await cluster.hostOf(id));
    const b = cluster.hosts.find((h) => h !== a)!;
    await until(async () => (await count(a, id)) >= 5, 'the counter counts');
    // A running neighbour on each host it may resume on: the slot it holds on A is taken there.
    const targets = mode === 'roles' ? cluster.hosts.filter((h) => h !== a) : [b];
    const neighbours: string[] = [];
    for (let i = 0; i < 8 && targets.some((h) => sandboxesRunningOn(h).length === 0); i++) {
      const created = await clientFor(b).call('POST', '/v1/sandboxes', { timeoutMs: 600_000 });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      neighbours.push(created.json.id as string);
    }
    assert.ok(targets.every((h) => sandboxesRunningOn(h).length > 0), 'every host it may resume on runs a neighbour');
    const before = { count: await count(a, id), pid: (await clientFor(a).sh(id, 'cat /tmp/counter.pid')).trim() };
    const paused = await clientFor(a).call('POST', `/v1/sandboxes/${id}/pause`);
    assert.equal(paused.status, 200, JSON.stringify(paused.json));
    const snapshotId = await cluster.durablePausedImage(id);
    await a.daemon!.stop();
    for (const other of cluster.hosts.filter((h) => h !== a)) assert.ok(!existsSync(`${other.dataDir}/snapshots/${snapshotId}/manifest.json`), `${other.hostId} does not hold the image before the resume`);
    // Plain daemons: the client asks host B itself (what the API role's placement does for it); roles: the API places it.
    const resumed = await clientFor(b).call('POST', `/v1/sandboxes/${id}/resume`);
    assert.equal(resumed.status, 200, JSON.stringify(resumed.json));
    const holder = hostNamed(await cluster.hostOf(id));
    assert.ok(holder !== a && (mode === 'roles' || holder === b), `resumed on another host (${holder.hostId})`);
    assert.ok(sandboxesRunningOn(holder).includes(id));
    await assertIntact(holder, id, before);
    // Each sandbox there in a namespace of its own (the resume took a slot of the holder's, not A's number).
    const running = sandboxesRunningOn(holder);
    const namespaces = running.map((sid) => (JSON.parse(readFileSync(join(holder.dataDir, 'runtime/gvisor/bundles', sid, 'instance.json'), 'utf8')) as { netnsPath: string }).netnsPath);
    assert.equal(new Set(namespaces).size, running.length, `one namespace per sandbox on ${holder.hostId}: ${namespaces.join(' ')}`);
    for (const neighbour of neighbours.filter((n) => running.includes(n))) assert.equal((await clientFor(holder).sh(neighbour, 'echo ok')).trim(), 'ok', `neighbour ${neighbour} still answers`);
    await cluster.startHost(a.index);
    assert.equal((await clientFor(holder).call('DELETE', `/v1/sandboxes/${id}`)).status, 204);
    for (const neighbour of neighbours) await clientFor(b).call('DELETE', `/v1/sandboxes/${neighbour}`);
  });

  test('port URLs answer at the API\'s ingress edge as at the host: HTTP, WebSocket, token, wake, kill', { skip: mode === 'roles' ? false : 'the ingress edge is the API role\'s' }, async () => {
    const kit = ingressTestKit(() => ({ url: cluster.entryUrl(), key: cluster.apiKey, ingressPort: cluster.edgePort }));
    const id = await kit.serving({ ports: [8000, { port: 8001, access: 'public' }] }, 8000);
    await kit.put(id, '/root/ws.py', WS_SERVER_PY);
    await kit.background(id, 'python3 /root/ws.py 8001');
    const holder = hostNamed(await cluster.hostOf(id));
    // The same request straight to the host's own ingress listener, for comparison.
    const direct = ingressTestKit(() => ({ url: holder.url, key: cluster.apiKey, ingressPort: 7424, ingressAddress: holder.address }));
    const { url, host, token } = await kit.urlOf(id, 8000);
    assert.equal(url, `http://8000-${id.toLowerCase()}.localhost:${cluster.edgePort}/`, 'the URL names the edge');
    const name = host.split(':')[0] as string;
    const same = async (what: string, status: number, code: string | null, headers: Record<string, string> = {}, hostName = name): Promise<IngressReply> => {
      const [atEdge, atHost] = [await kit.ingress(hostName, '/index.html', { headers }), await direct.ingress(hostName, '/index.html', { headers })];
      assert.equal(atEdge.status, status, `${what} at the edge: ${atEdge.body}`);
      assert.equal(atHost.status, status, `${what} at the host: ${atHost.body}`);
      if (code) for (const r of [atEdge, atHost]) assert.equal(JSON.parse(r.body).error.code, code, what);
      return atEdge;
    };
    await same('no token', 401, 'ACCESS_TOKEN_REQUIRED');
    await same('another sandbox\'s token', 403, 'ACCESS_TOKEN_INVALID', { 'x-ramify-access-token': `rit_${'A'.repeat(43)}` });
    assert.equal((await same('its token', 200, null, { 'x-ramify-access-token': token as string })).body, 'hello from the sandbox\n');
    // Another host's ingress, asked directly, does not serve it (a slot number is per host) nor move it.
    const other = cluster.hosts.find((h) => h !== holder)!;
    const elsewhere = await ingressTestKit(() => ({ url: other.url, key: cluster.apiKey, ingressPort: 7424, ingressAddress: other.address })).ingress(name, '/index.html', { headers: { 'x-ramify-access-token': token as string } });
    assert.equal(elsewhere.status, 409, elsewhere.body);
    assert.equal(JSON.parse(elsewhere.body).error.code, 'PLACEMENT_INVALID');
    // A WebSocket echo on the public port, through the edge.
    const echo = async (): Promise<string> => {
      const socket = new WebSocket(`ws://127.0.0.1:${cluster.edgePort}/`, { headers: { host: `8001-${id.toLowerCase()}.localhost` } });
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      socket.send('ping');
      const reply = await new Promise<string>((resolve) => socket.once('message', (m) => resolve(m.toString())));
      socket.close();
      return reply;
    };
    await until(async () => (await echo().catch(() => '')) === 'echo ping', 'the echo server answers through the edge');
    // A paused sandbox is woken by a request at the edge (its host's ingress wakes it). The pause is
    // answered by the host: its URLs name the edge too (--ingress-public-port).
    const paused = await kit.call('POST', `/v1/sandboxes/${id}/pause`);
    assert.equal(paused.status, 200, JSON.stringify(paused.json));
    assert.deepEqual(paused.json.ingress, { domain: 'localhost', protocol: 'http', port: cluster.edgePort });
    const woken = await kit.ingress(name, '/index.html', { headers: { 'x-ramify-access-token': token as string } });
    assert.equal(woken.status, 200, woken.body);
    assert.equal((await kit.call('GET', `/v1/sandboxes/${id}`)).json.state, 'running');
    assert.equal(await echo(), 'echo ping', 'the WebSocket server came back with it');
    assert.equal((await kit.call('DELETE', `/v1/sandboxes/${id}`)).status, 204);
    await same('a killed sandbox', 410, 'SANDBOX_KILLED');
    await same('an unknown sandbox', 404, 'SANDBOX_NOT_FOUND', {}, `8000-sbx_${'0'.repeat(26)}.localhost`);
  });

  test('teardown removes every process, namespace, veth, nftables table and directory', async () => {
    await cluster.close();
    assert.deepEqual(cluster.leftovers(), []);
    assert.deepEqual(nftTables(null).filter((t) => tableName(t).startsWith(PREFIX)), []);
  });
});
