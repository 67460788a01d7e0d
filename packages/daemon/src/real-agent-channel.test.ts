/**
 * The gVisor agent channel over TCP (docs/design/RUNTIME-GVISOR.md, "The agent channel") through a REAL
 * daemon (`serve()` in-process, prefix `rag`, egress enforcement on, the ingress on a free loopback port)
 * and REAL gVisor sandboxes: the daemon reaches every agent over TCP into its netstack (a resume, a fork
 * child), each incarnation's agent opens only with its own key (a fork child's not with its parent's), and
 * nothing but the daemon's agent dialer reaches the agent's port: not a peer on the same private network,
 * not the host as root or as the ingress's dialer, not a port URL naming it. Skipped, with the reason,
 * when not root, without runsc/nft, or without the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_TCP_PORT } from '@ramify/agent';
import { DEFAULT_INGRESS_UID, layoutForPrefix, slotAddresses } from '@ramify/network';
import { serve, type RamifyServer } from './serve.js';
import { ingressTestKit } from './real-ingress-support.js';
import { realRuntimeSkip, registerRootfsTemplate, stopRealDaemon } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc', 'nft']);

const PREFIX = 'rag';
let dataDir: string;
let server: RamifyServer | undefined;
let key = '';
let ingressPort = 0;

const { call, sh, serving, urlOf, ingress } = ingressTestKit(() => (server ? { url: server.url, key, ingressPort } : undefined));

/** `cat /proc/net/tcp` in `id` shows an established connection on the agent's port: the host's channel. */
const overTcp = async (id: string): Promise<boolean> => {
  const local = `:${AGENT_TCP_PORT.toString(16).toUpperCase()} `;
  return (await sh(id, 'cat /proc/net/tcp')).split('\n').some((line) => line.includes(local) && / 01 /.test(line));
};

const slotAddressOf = async (id: string): Promise<string> =>
  slotAddresses(layoutForPrefix(PREFIX), (await server!.core.store.getSandbox(id))?.slot as number).slotAddress;

/** The key the runtime gave `id`'s current incarnation (its instance file). */
const agentKeyOf = async (id: string): Promise<string> =>
  (JSON.parse(await readFile(join(dataDir, 'runtime', 'gvisor', 'bundles', id, 'instance.json'), 'utf8')) as { agent: { key: string } }).agent.key;

/** From inside `id`, over loopback: send a channel hello with `keyHex` and say what the agent answered (`1`) or `closed`. */
const helloFromInside = async (id: string, keyHex: string): Promise<string> =>
  (
    await sh(
      id,
      `python3 -c "import socket; s=socket.create_connection(('127.0.0.1', ${AGENT_TCP_PORT}), 3); s.settimeout(3); s.sendall(b'RMFK\\x01' + bytes.fromhex('${keyHex}') + bytes(32)); a=s.recv(1); print(a[0] if a else 'closed')"`,
    )
  ).trim();

/** Connect to `host:port` from the host, as root or (with `uid`) as that user; `connected` or the error code. */
function connectFromHost(host: string, port: number, uid?: number): string {
  const script = `const s=require('net').connect({host:'${host}',port:${port},timeout:3000});s.on('connect',()=>{console.log('connected');process.exit(0)});s.on('timeout',()=>{console.log('ETIMEDOUT');process.exit(0)});s.on('error',(e)=>{console.log(e.code);process.exit(0)})`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', ...(uid !== undefined ? { uid, gid: uid } : {}), cwd: '/' });
  return r.stdout.trim() || `failed: ${r.stderr}`;
}

describe('the agent channel over TCP (real gVisor)', { skip, timeout: 1_200_000 }, () => {
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-rag-'));
    server = await serve({
      dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX },
      ingress: { host: '127.0.0.1', port: 0 },
    });
    key = server.newApiKey ?? '';
    ingressPort = Number(server.ingress?.address.split(':').pop());
    await registerRootfsTemplate(server.core, rootfs as string, { templateId: 'tpl_rag', snapshotId: 'snap_rag_base' });
    assert.equal((await call('POST', '/v1/networks', { name: 'n1' })).status, 201);
  });
  after(async () => {
    if (server) await stopRealDaemon(server, call);
    await rm(dataDir, { recursive: true, force: true });
  });

  test('the daemon reaches the agent over TCP after a create, a resume and in a fork child; each opens with its own key only', async () => {
    const id = await serving({}, 8000);
    assert.ok(await overTcp(id), 'created: the command ran over TCP');
    assert.equal((await call('POST', `/v1/sandboxes/${id}/pause`)).status, 200);
    assert.equal((await call('POST', `/v1/sandboxes/${id}/resume`)).status, 200);
    assert.ok(await overTcp(id), 'resumed');
    const fork = await call('POST', `/v1/sandboxes/${id}/fork`, { count: 1 });
    assert.equal(fork.status, 201, JSON.stringify(fork.json));
    const child = fork.json.sandboxes[0].id as string;
    assert.ok(await overTcp(child), 'the fork child');
    const [parentKey, childKey] = [await agentKeyOf(id), await agentKeyOf(child)];
    assert.notEqual(parentKey, childKey);
    assert.equal(await helloFromInside(child, parentKey), 'closed', "the parent's key does not open the child's agent");
    assert.equal(await helloFromInside(child, '00'.repeat(32)), 'closed', 'nor a made-up one');
    assert.equal(await helloFromInside(child, childKey), '1', 'its own does');
    assert.equal(await helloFromInside(id, parentKey), '1', "the parent's opens the parent's");
    await call('DELETE', `/v1/sandboxes/${child}`);
  });

  test('no other sandbox reaches the agent port: not a peer on the same private network, by name or slot address', async () => {
    const a = await serving({ networks: [{ network: 'n1', alias: 'a' }] }, 8000);
    const b = await serving({ networks: [{ network: 'n1', alias: 'b' }] }, 8000);
    const slotA = await slotAddressOf(a);
    const probe = async (host: string, port: number): Promise<string> =>
      (await sh(b, `python3 -c "import socket; s=socket.socket(); s.settimeout(3); print(s.connect_ex(('${host}', ${port})))"`)).trim();
    assert.equal(await probe('a.n1.internal', 8000), '0', 'the peer reaches its server (the path is open)');
    assert.notEqual(await probe('a.n1.internal', AGENT_TCP_PORT), '0', 'the peer reached the agent port by name');
    assert.notEqual(await probe(slotA, AGENT_TCP_PORT), '0', 'the peer reached the agent port at the slot address');
    assert.ok(await overTcp(a), 'the daemon still does');
  });

  test("the host reaches it only as the agent dialer (not as root, not as the ingress's dialer), and a port URL naming it reaches nothing", async () => {
    // Exposing the agent's port is refused up front; the firewall below would stop the ingress anyway.
    const refused = await call('POST', '/v1/sandboxes', { ports: [{ port: AGENT_TCP_PORT, access: 'public' }] });
    assert.deepEqual([refused.status, refused.json.error.code], [400, 'VALIDATION_FAILED'], JSON.stringify(refused.json));
    const id = await serving({ ports: [{ port: 8000, access: 'public' }] }, 8000);
    const slot = await slotAddressOf(id);
    assert.equal(connectFromHost(slot, AGENT_TCP_PORT), 'EHOSTUNREACH', 'root');
    assert.equal(connectFromHost(slot, AGENT_TCP_PORT, DEFAULT_INGRESS_UID), 'EHOSTUNREACH', "the ingress's dialer uid");
    assert.equal(connectFromHost(slot, 8000, DEFAULT_INGRESS_UID), 'connected', "the ingress's dialer reaches the sandbox's own server");
    const agentHost = (await urlOf(id, 8000)).host.replace(/^8000-/, `${AGENT_TCP_PORT}-`);
    const r = await ingress(agentHost, '/');
    assert.equal(r.status, 404, `a port URL of the agent port: ${r.status} ${r.body}`);
    assert.ok(await overTcp(id), 'the daemon still does');
  });
});
