/**
 * The API/host split through REAL processes' parts on one machine (docs/design/SCALE-OUT.md): a throwaway
 * Postgres 15 cluster, s3rver, one API-role daemon and two host-role daemons (real gVisor, namespaces,
 * nftables; each its own data dir, port, network prefix and host id), sharing nothing but Postgres and S3.
 * Shows: a create through the API is placed (on the host caching the template; on the other host, which
 * downloads the template image from S3, once the first drains) and forwarded; exec over a WebSocket through
 * the API; a fork lands on its parent's host, which must have room for its children (else 503 and nothing
 * forks); another team's sandbox is 404 at the API and nothing reaches a host; no key is 401; a host refuses
 * a create that placement did not send it; SSH through the API's relay (real-scale-out-ssh.ts), and a paused
 * sandbox of a lost host woken on the other by an SSH connection.
 * Skipped, with the reason, when not root, without runsc, the rootfs, or Postgres's binaries.
 */
import { Sandbox } from '@ramify/sdk';
import { startLocalS3Server, S3RVER_CREDENTIALS, waitDurable, type LocalS3Server } from '@ramify/storage/testsuite';
import { startPostgresCluster, type PostgresCluster } from '@ramify/store/testsuite';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { forceCleanup } from './real-egress-support.js';
import { apiCaller, realRuntimeSkip, registerRootfsTemplate, stopRealDaemon, type ApiReply } from './real-test-support.js';
import { sshRelayCases } from './real-scale-out-ssh.js';
import { run, sshOptions } from './real-ssh-support.js';
import { serve, type RamifyServer, type ServeOptions } from './serve.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const TOOLS = ['runsc', 'ssh', 'sftp', 'ssh-keygen', 'curl'];
const cluster: PostgresCluster | { skip: string } = realRuntimeSkip(rootfs, TOOLS) ? { skip: 'no runtime' } : await startPostgresCluster();
const skip = realRuntimeSkip(rootfs, TOOLS) || ('skip' in cluster ? cluster.skip : false);

const BUCKET = 'ramify-scale';
/** The host-loss and drain cases add ~30 s: `npm run test:full` runs them. */
const full = process.env.RAMIFY_TEST_FULL === '1' ? false : 'host loss and drain run in npm run test:full (RAMIFY_TEST_FULL=1): ~30 s more';
const HOSTS = [{ id: 'host-rra', prefix: 'rra' }, { id: 'host-rrb', prefix: 'rrb' }] as const;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

let s3: LocalS3Server | undefined;
let api: RamifyServer | undefined;
const hosts: RamifyServer[] = [];
const dirs: string[] = [];
let key = '';
let acmeKey = '';
/** Requests (and upgrades) each host's listener received, by host id. */
const received = new Map<string, number>();
const call = apiCaller(() => api?.url, () => key);
/** Short leases: a stopped host is written off within seconds (the sweep runs every 2 s). */
const LEASE = { leaseMs: 3000, heartbeatMs: 1000 };
const ports = new Map<string, number>();
/** Each host's SSH gateway port, kept across a restart. */
const sshPorts = new Map<string, number>();

async function start(options: ServeOptions & { role: 'api' | 'host' }, dataDirName: string): Promise<RamifyServer> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), `ramify-${dataDirName}-`)));
  if (!dirs.includes(dataDir)) dirs.push(dataDir);
  const server = await serve({
    dataDir, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], databaseUrl: await (cluster as PostgresCluster).ensureDatabase('scale'),
    snapshotStorage: { s3Endpoint: s3!.endpoint, s3Bucket: BUCKET, s3PathStyle: true, s3Credentials: { ...S3RVER_CREDENTIALS } }, ...options,
  });
  key ||= server.newApiKey ?? '';
  return server;
}

/** Start (or restart, on the same data dir, port and id) host daemon `h`, counting the requests it receives. */
async function startHost(h: (typeof HOSTS)[number], dataDir: string): Promise<RamifyServer> {
  if (!dirs.includes(dataDir)) dirs.push(dataDir);
  const port = ports.get(h.id) as number;
  const server = await start({
    role: 'host', hostId: h.id, port, advertiseUrl: `http://127.0.0.1:${port}`, network: { prefix: h.prefix }, hostLease: LEASE, dataDir, ssh: { host: '127.0.0.1', port: sshPorts.get(h.id) as number },
  }, h.prefix);
  received.set(h.id, received.get(h.id) ?? 0);
  const count = (): void => void received.set(h.id, (received.get(h.id) ?? 0) + 1);
  server.app.server.on('request', count).on('upgrade', count);
  return server;
}

describe('scale-out: one API process and two hosts over Postgres and S3 (real gVisor)', { skip, timeout: 600_000 }, () => {
  before(async () => {
    s3 = await startLocalS3Server({ bucket: BUCKET });
    for (const h of HOSTS) {
      ports.set(h.id, await freePort());
      sshPorts.set(h.id, await freePort());
      hosts.push(await startHost(h, await mkdtemp(join(tmpdir(), `ramify-${h.prefix}-`))));
    }
    // Every process starts (and checks the bucket) before anything is uploaded: s3rver's listing answers 500
    // while objects are being written.
    api = await start({ role: 'api', port: 0, ssh: { host: '127.0.0.1', port: 0 } }, 'rr-api');
    // The template is built on the first host; its image goes to S3 for the other.
    await registerRootfsTemplate(hosts[0]!.core, rootfs as string, { templateId: 'tpl_rr', snapshotId: 'snap_rr_base' });
    await waitDurable(hosts[0]!.core.storage, 'snap_rr_base', 120_000);
    // Placement prefers the host caching the image once a heartbeat has reported it (the first create expects host A).
    for (const deadline = Date.now() + 30_000; !(await api.core.store.getHost('host-rra'))?.cachedImageIds.includes('snap_rr_base'); await new Promise((r) => setTimeout(r, 100))) {
      assert.ok(Date.now() < deadline, 'host A reports the template image cached');
    }
    assert.ok(key, 'the first process made the API key');
  });
  after(async () => {
    // Kills go through the API, which forwards each to the sandbox's host (a host's own core must not kill
    // a sandbox another host holds: its runtime instance is not there).
    for (const team of [key, acmeKey].filter((k) => k !== '')) {
      const caller = apiCaller(() => api?.url, () => team);
      for (const s of (await caller('GET', '/v1/sandboxes').catch(() => null))?.json?.sandboxes ?? []) await caller('DELETE', `/v1/sandboxes/${s.id}`).catch(() => undefined);
    }
    for (const [i, server] of hosts.entries()) {
      await stopRealDaemon(server, apiCaller(() => server.url, () => key)).catch(async () => {
        await server.close().catch(() => undefined);
        await forceCleanup(HOSTS[i]!.prefix, server.dataDir);
      });
    }
    await api?.close().catch(() => undefined);
    await s3?.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
    if (!('skip' in cluster)) cluster.stop();
  });

  const hostOf = async (id: string): Promise<string | null> => (await api!.core.store.getSandbox(id))?.hostId ?? null;
  const created = async (): Promise<ApiReply> => call('POST', '/v1/sandboxes', { timeoutMs: 600_000 });

  test('the hosts registered; a create is placed on the host caching the template, forwarded, and runs there', async () => {
    assert.deepEqual((await api!.core.store.listHosts()).map((h) => [h.id, h.state]), [['host-rra', 'active'], ['host-rrb', 'active']]);
    const reply = await created();
    assert.equal(reply.status, 201, JSON.stringify(reply.json));
    assert.equal(reply.json.state, 'running');
    assert.equal(await hostOf(reply.json.id), 'host-rra');
    // Audited once, by the API (the host skips the call it sees signed), with the sandbox the host made.
    const creates = async () => (await api!.core.store.listAudit({ sandboxId: reply.json.id })).filter((e) => e.action === 'sandbox.create');
    await until('the create is audited', async () => (await creates()).length > 0, 5000);
    await new Promise((r) => setTimeout(r, 200));
    assert.deepEqual((await creates()).map((e) => [e.status, e.path]), [[201, '/v1/sandboxes']]);
    // Exec over the command WebSocket, through the API.
    const sbx = await Sandbox.connect(reply.json.id, { apiUrl: api!.url, apiKey: key, requestTimeoutMs: 600_000 });
    let streamed = '';
    const result = await sbx.commands.run('echo "on $(hostname)"; echo 42 > /tmp/n', { onStdout: (chunk) => { streamed += chunk; } });
    assert.equal(result.exitCode, 0);
    assert.match(streamed, /^on /);
    // A fork lands on its parent's host.
    const fork = await call('POST', `/v1/sandboxes/${reply.json.id}/fork`, { count: 1 });
    assert.equal(fork.status, 201, JSON.stringify(fork.json));
    const childId = fork.json.sandboxes[0].id as string;
    assert.equal(await hostOf(childId), 'host-rra');
    const child = await call('POST', `/v1/sandboxes/${childId}/commands`, { cmd: 'cat /tmp/n' });
    assert.equal(child.json.stdout, '42\n');
    // Forks take capacity on the parent's host: with it nearly full, a fork of 2 is refused before anything forks.
    const rra = (await api!.core.store.getHost('host-rra'))!;
    const filler = await api!.core.store.reserveHost({ reservationId: 'rsv_rr_filler', hostId: 'host-rra', memoryMB: rra.capacity.memoryMB - 3 * reply.json.memoryMB, cpus: 1, imageId: null, ttlMs: 60_000 });
    try {
      const before = (await call('GET', '/v1/sandboxes')).json.sandboxes.length as number;
      const full = await call('POST', `/v1/sandboxes/${reply.json.id}/fork`, { count: 2 });
      assert.equal(full.status, 503, JSON.stringify(full.json));
      assert.equal(full.json.error.code, 'NO_HOST_CAPACITY');
      assert.match(full.json.error.message, /host 'host-rra' has no room for 2 sandboxes .*memory: \d+ MiB free/);
      assert.equal((await call('GET', '/v1/sandboxes')).json.sandboxes.length, before, 'nothing forked');
      // A fork sent to the host directly has no reservation: refused there.
      const direct = await apiCaller(() => hosts[0]!.url, () => key)('POST', `/v1/sandboxes/${reply.json.id}/fork`, { count: 1 });
      assert.equal(direct.status, 409, JSON.stringify(direct.json));
      assert.equal(direct.json.error.code, 'PLACEMENT_INVALID');
    } finally {
      await api!.core.store.releaseReservation(filler.id);
    }
  });

  test('with the first host draining, a create goes to the other, which downloads the template image from S3', async () => {
    await api!.core.store.setHostState('host-rra', 'draining');
    try {
      const reply = await created();
      assert.equal(reply.status, 201, JSON.stringify(reply.json));
      assert.equal(await hostOf(reply.json.id), 'host-rrb');
      const r = await call('POST', `/v1/sandboxes/${reply.json.id}/commands`, { cmd: 'echo b' });
      assert.equal(r.json.stdout, 'b\n');
    } finally {
      await api!.core.store.setHostState('host-rra', 'active');
    }
  });

  test('another team\'s sandbox is 404 at the API and no key is 401, nothing forwarded; a host refuses an unplaced create', async () => {
    const own = (await call('GET', '/v1/sandboxes')).json.sandboxes[0].id as string;
    assert.equal((await call('POST', '/v1/teams', { id: 'acme' })).status, 201);
    acmeKey = (await call('POST', '/v1/keys', { team: 'acme', role: 'admin' })).json.key as string;
    const acme = apiCaller(() => api?.url, () => acmeKey);
    const before = [...received.values()].reduce((a, b) => a + b, 0);
    const foreign = await acme('POST', `/v1/sandboxes/${own}/commands`, { cmd: 'id' });
    assert.equal(foreign.status, 404);
    assert.equal(foreign.json.error.code, 'SANDBOX_NOT_FOUND');
    const ws = await Sandbox.connect(own, { apiUrl: api!.url, apiKey: acmeKey }).catch((err: unknown) => err);
    assert.equal((ws as { code?: string }).code, 'SANDBOX_NOT_FOUND');
    const anonymous = await fetch(`${api!.url}/v1/sandboxes/${own}/commands`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"cmd":"id"}' });
    assert.equal(anonymous.status, 401);
    assert.equal([...received.values()].reduce((a, b) => a + b, 0), before, 'no request reached a host');
    // A client calling a host directly cannot pick it: the host wants the API's reservation.
    const direct = await apiCaller(() => hosts[1]!.url, () => key)('POST', '/v1/sandboxes', { timeoutMs: 60_000 });
    assert.equal(direct.status, 409);
    assert.equal(direct.json.error.code, 'PLACEMENT_INVALID');
    const forged = await fetch(`${hosts[1]!.url}/v1/sandboxes`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-ramify-placement': 'rsv_forged' }, body: '{}' });
    assert.equal(forged.status, 409);
  });

  sshRelayCases({ api: () => api!, hosts: () => hosts, call, acme: () => apiCaller(() => api?.url, () => acmeKey), freePort });

  const sh = async (id: string, cmd: string): Promise<string> => {
    const r = await call('POST', `/v1/sandboxes/${id}/commands`, { cmd });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    return r.json.stdout as string;
  };
  const until = async (what: string, check: () => Promise<boolean>, limitMs = 60_000): Promise<void> => {
    for (const deadline = Date.now() + limitMs; !(await check()); await new Promise((r) => setTimeout(r, 200))) {
      if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    }
  };

  test('a stopped host is written off: its running sandbox is error HOST_LOST, its durable paused one resumes on the other host still counting', { skip: full }, async () => {
    const store = api!.core.store;
    // Both on host A (B, which caches the template too by now, drains meanwhile).
    await store.setHostState('host-rrb', 'draining');
    const paused = (await call('POST', '/v1/sandboxes', { timeoutMs: 600_000 })).json.id as string;
    const running = (await call('POST', '/v1/sandboxes', { timeoutMs: 600_000 })).json.id as string;
    // Woken on host B by an SSH connection through the API's relay, below.
    const sleeper = (await call('POST', '/v1/sandboxes', { timeoutMs: 600_000 })).json.id as string;
    await store.setHostState('host-rrb', 'active');
    for (const id of [paused, running, sleeper]) assert.equal((await store.getSandbox(id))?.hostId, 'host-rra');
    await sh(sleeper, 'echo mark > /tmp/mark');
    assert.equal((await call('POST', `/v1/sandboxes/${sleeper}/pause`)).json.state, 'paused');
    await call('POST', `/v1/sandboxes/${paused}/commands`, { cmd: 'i=0; while true; do i=$((i+1)); echo $i > /tmp/count.new; mv /tmp/count.new /tmp/count; sleep 0.2; done', background: true });
    await until('the counter counts', async () => Number(await sh(paused, 'cat /tmp/count 2>/dev/null || echo 0')) > 2);
    const pause = await call('POST', `/v1/sandboxes/${paused}/pause`);
    assert.equal(pause.status, 200, JSON.stringify(pause.json));
    const image = (await store.getSandbox(paused))!.pausedSnapshotId!;
    const sleeperImage = (await store.getSandbox(sleeper))!.pausedSnapshotId!;
    for (const i of [image, sleeperImage]) await waitDurable(hosts[0]!.core.storage, i, 120_000);
    // Placement trusts a lost host's image once a heartbeat after the pause no longer listed it as pending.
    const written = Math.max((await store.getSnapshot(image))!.createdAt, (await store.getSnapshot(sleeperImage))!.createdAt);
    await until('a heartbeat reports the images durable', async () => {
      const host = await store.getHost('host-rra');
      return host !== null && !host.pendingUploadIds.includes(image) && !host.pendingUploadIds.includes(sleeperImage) && host.lastHeartbeatAt > written + 2000;
    });
    // Host A stops (no drain): its lease runs out and the API's sweep writes it off. Its runtime instances stay
    // (a stopped daemon leaves its sandboxes running); after() removes them as a returning host's reconcile would.
    await hosts[0]!.close();
    await until('the sweep marks host A gone', async () => (await store.getHost('host-rra'))?.state === 'gone', 30_000);
    const lost = await call('GET', `/v1/sandboxes/${running}`);
    assert.equal(lost.json.state, 'error');
    assert.match(lost.json.error ?? '', /^HOST_LOST: host 'host-rra'/);
    const onLost = await call('POST', `/v1/sandboxes/${running}/commands`, { cmd: 'true' });
    assert.equal(onLost.json.error.code, 'HOST_LOST');
    // Its kill is answered by the API (no live host holds it).
    assert.equal((await call('DELETE', `/v1/sandboxes/${running}`)).status, 204);
    assert.equal((await call('GET', `/v1/sandboxes/${running}`)).json.state, 'killed');
    // The paused sandbox resumes on host B from S3, memory and processes intact.
    const resumed = await call('POST', `/v1/sandboxes/${paused}/resume`);
    assert.equal(resumed.status, 200, JSON.stringify(resumed.json));
    assert.equal((await store.getSandbox(paused))?.hostId, 'host-rrb');
    const first = Number(await sh(paused, 'cat /tmp/count'));
    await until('the counter counts on host B', async () => Number(await sh(paused, 'cat /tmp/count')) > first);
    assert.ok(first > 2);
    // An SSH connection through the API resumes the other through placement, on host B, its files intact.
    const access = await call('POST', `/v1/sandboxes/${sleeper}/ssh-access`, {});
    const woken = await run('ssh', [...sshOptions(null), '-p', String(api!.ssh?.port), `${access.json.user}@127.0.0.1`, 'cat /tmp/mark']);
    assert.deepEqual([woken.code, woken.stdout], [0, 'mark\n'], woken.stderr);
    assert.equal((await store.getSandbox(sleeper))?.hostId, 'host-rrb');
  });

  test('a host drains: placement skips it, its running sandboxes are paused, their images uploaded, then it is gone', { skip: full }, async () => {
    const store = api!.core.store;
    const before = (await store.listSandboxes({ states: ['running'], hostId: 'host-rrb', limit: 100 })).sandboxes.map((s) => s.id);
    assert.ok(before.length > 0, 'host B runs sandboxes');
    const drained = await hosts[1]!.drain();
    assert.deepEqual(drained?.paused.sort(), [...before].sort());
    assert.deepEqual(drained?.failed, []);
    assert.equal(drained?.uploadsDone, true);
    const host = await store.getHost('host-rrb');
    assert.equal(host?.state, 'gone');
    assert.deepEqual(host?.pendingUploadIds, []);
    for (const id of before) assert.equal((await call('GET', `/v1/sandboxes/${id}`)).json.state, 'paused');
    // No live host is left: a create has nowhere to go.
    const refused = await call('POST', '/v1/sandboxes', {});
    assert.equal(refused.status, 503);
    assert.equal(refused.json.error.code, 'NO_HOST_CAPACITY');
  });
});
