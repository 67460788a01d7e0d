/**
 * Private networks on the host's real egress table: four plain NamespaceNetwork slots (prefix `rpnw`)
 * stand in for sandboxes, each running a TCP+UDP echo server; `a` and `b` on n1, `c` on n2, `d` on none.
 * Real nftables, real namespaces, the real policy resolver (its only upstream a scripted DNS server in
 * a fake internet of prefix `rpnx`, which must never be asked an `.internal` name). Skipped when not root.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseEgressPolicy, type NetworkAttachment, type PrivateNetworkMembership } from '@ramify/core';
import { run, runChecked } from '../exec.js';
import { NamespaceNetwork } from '../namespace-network.js';
import { DNS_SERVICE_ADDRESS, layoutForPrefix } from '../slots.js';
import { startHostEgress, type HostEgress } from '../egress/host-egress.js';
import { FakeInternet } from '../testing/fake-internet.js';
import { queryDnsFrom } from '../testing/dns-query.js';
import { probeFrom } from '../testing/net-probe.js';

const PREFIX = 'rpnw';
const layout = layoutForPrefix(PREFIX);
const PORT = 7400;
const skip = process.getuid?.() === 0 ? false : 'needs root (namespaces, nftables)';
const UPSTREAM = '198.51.100.61';

let rig: FakeInternet;
let egress: HostEgress;
let network: NamespaceNetwork;
const slots: Record<'a' | 'b' | 'c' | 'd', NetworkAttachment> = {} as never;
const servers: ChildProcess[] = [];

const ECHO_SERVER = `const net=require('net'),dgram=require('dgram');
net.createServer((s)=>s.on('data',(d)=>s.write(d)).on('error',()=>{})).listen(+process.argv[1],'0.0.0.0');
const u=dgram.createSocket('udp4');u.on('message',(m,r)=>u.send(m,r.port,r.address));u.bind(+process.argv[1],'0.0.0.0');`;

const n = (network: string, alias: string): PrivateNetworkMembership => ({ networkId: `net_${network}`, network, alias });
const on = (key: keyof typeof slots, memberships: PrivateNetworkMembership[]) => egress.networks.apply(`sbx_${key}`, slots[key].slot, memberships);
const tcp = async (from: keyof typeof slots, address: string) => (await probeFrom(slots[from].netnsPath, { kind: 'tcp', address, port: PORT, timeoutMs: 1000 })).outcome;
const addressOf = (key: keyof typeof slots) => slots[key].slotAddress;

/** One UDP datagram from a slot and its echo: `echo` when it came back within 1 s. */
async function udp(from: keyof typeof slots, address: string): Promise<'echo' | 'none'> {
  const script = `const u=require('dgram').createSocket('udp4');u.on('message',()=>{console.log('echo');process.exit(0)});
u.send('x',+process.argv[2],process.argv[1]);setTimeout(()=>{console.log('none');process.exit(0)},1000);`;
  return (await runChecked(['nsenter', `--net=${slots[from].netnsPath}`, process.execPath, '-e', script, address, String(PORT)])).trim() as 'echo' | 'none';
}

const resolve = async (from: keyof typeof slots, name: string) => {
  const r = (await queryDnsFrom(slots[from].netnsPath, [{ name }], { server: DNS_SERVICE_ADDRESS, timeoutMs: 2000 }))[0]!;
  return { rcode: r.rcode, answers: r.answers.map((x) => x.data) };
};

/** The rules of the table (no set elements), for the constant-rule-count check. */
const ruleCount = async (): Promise<number> => (await runChecked(['nft', '-t', 'list', 'table', 'inet', PREFIX])).split('\n').filter((l) => /^\s+(?!chain|set|type|flags|elements|\})\S/.test(l)).length;

describe('private networks on the real egress table (namespaces as sandboxes)', { skip, timeout: 120_000 }, () => {
  before(async () => {
    await new NamespaceNetwork({ prefix: PREFIX }).destroyAll();
    rig = await FakeInternet.start({ prefix: 'rpnx', web: [], echo: [], dns: { address: UPSTREAM }, zone: {} });
    egress = await startHostEgress({ prefix: PREFIX, layout, upstreams: [{ address: UPSTREAM }], watchIntervalMs: 200 });
    network = new NamespaceNetwork({ prefix: PREFIX, hostFirewall: egress.enforcer });
    for (const [i, key] of (['a', 'b', 'c', 'd'] as const).entries()) {
      slots[key] = await network.attach(`sbx_${key}`, i);
      await egress.enforcer.apply(`sbx_${key}`, i, parseEgressPolicy([]));
      const server = spawn('nsenter', [`--net=${slots[key].netnsPath}`, process.execPath, '-e', ECHO_SERVER, String(PORT)], { stdio: 'ignore' });
      servers.push(server);
    }
    await sleep(300);
    await on('a', [n('n1', 'a')]);
    await on('b', [n('n1', 'b')]);
    await on('c', [n('n2', 'c')]);
    await on('d', []);
  });

  after(async () => {
    for (const s of servers) s.kill('SIGKILL');
    await egress?.close();
    await network?.destroyAll();
    await rig?.teardown();
    assert.notEqual((await run(['nft', 'list', 'table', 'inet', PREFIX])).code, 0, 'the table is gone');
  });

  test('members reach each other over TCP and UDP both ways; nobody else is reachable, either way', async () => {
    assert.equal(await tcp('a', addressOf('b')), 'ok');
    assert.equal(await tcp('b', addressOf('a')), 'ok');
    assert.equal(await udp('a', addressOf('b')), 'echo');
    assert.equal(await udp('b', addressOf('a')), 'echo');
    const pairs = [['a', 'c'], ['a', 'd'], ['c', 'a'], ['d', 'a'], ['c', 'b']] as const;
    const outcomes = await Promise.all(pairs.map(async ([from, to]) => [await tcp(from, addressOf(to)), await udp(from, addressOf(to))]));
    assert.deepEqual(outcomes, pairs.map(() => ['failed', 'none']), pairs.map(([f, t]) => `${f} -> ${t}`).join(', '));
  });

  test('names: a member resolves the others on its network; other networks, unknown aliases and non-members get NXDOMAIN; nothing is asked upstream', async () => {
    assert.deepEqual(await resolve('a', 'b.n1.internal'), { rcode: 'NOERROR', answers: [addressOf('b')] });
    assert.deepEqual(await resolve('b', 'a.n1.internal'), { rcode: 'NOERROR', answers: [addressOf('a')] });
    for (const [from, name] of [['a', 'c.n2.internal'], ['a', 'zz.n1.internal'], ['d', 'a.n1.internal'], ['c', 'b.n1.internal'], ['a', 'n1.internal'], ['a', 'x.b.n1.internal']] as const) {
      assert.deepEqual(await resolve(from, name), { rcode: 'NXDOMAIN', answers: [] }, `${name} asked by ${from}`);
    }
    await rig.flush();
    assert.deepEqual(rig.events('dns-query'), [], 'no .internal name was forwarded upstream');
  });

  test('a deny-all egress policy leaves network traffic and names alone', async () => {
    await egress.enforcer.apply('sbx_a', 0, parseEgressPolicy({ mode: 'deny-all' }));
    try {
      assert.equal(await tcp('a', addressOf('b')), 'ok');
      assert.deepEqual(await resolve('a', 'b.n1.internal'), { rcode: 'NOERROR', answers: [addressOf('b')] });
    } finally {
      await egress.enforcer.apply('sbx_a', 0, parseEgressPolicy([]));
    }
  });

  test('live attach opens a new member at once; detach cuts an open connection and takes the name away; the rule count stays', async () => {
    const rules = await ruleCount();
    assert.ok(rules > 20, `the table's rules were counted (${rules})`);
    await on('c', [n('n2', 'c'), n('n1', 'c')]);
    assert.equal(await tcp('a', addressOf('c')), 'ok', 'reachable as soon as attach resolved');
    assert.deepEqual(await resolve('a', 'c.n1.internal'), { rcode: 'NOERROR', answers: [addressOf('c')] });
    assert.equal(await ruleCount(), rules, 'no rule was added');
    const script = `const s=require('net').connect(+process.argv[2],process.argv[1]);s.on('connect',()=>setInterval(()=>s.write('x'),100));
s.on('data',()=>console.log('echo'));s.on('error',()=>{});setTimeout(()=>process.exit(0),5000);`;
    const hold = spawn('nsenter', [`--net=${slots.a.netnsPath}`, process.execPath, '-e', script, addressOf('c'), String(PORT)], { stdio: ['ignore', 'pipe', 'ignore'] });
    let echoes = 0;
    createInterface({ input: hold.stdout! }).on('line', () => echoes++);
    try {
      while (echoes < 3) await sleep(50);
      await on('c', [n('n2', 'c')]);
      await sleep(500);
      const atCut = echoes;
      await sleep(1000);
      assert.equal(echoes, atCut, 'no echo arrives once c left n1');
    } finally {
      hold.kill('SIGKILL');
    }
    assert.equal(await tcp('a', addressOf('c')), 'failed');
    assert.deepEqual(await resolve('a', 'c.n1.internal'), { rcode: 'NXDOMAIN', answers: [] });
    assert.equal(await tcp('a', addressOf('b')), 'ok', 'the others stay up');
  });

  test('a deleted table comes back with the pairs (watchdog), and remove() forgets a slot', async () => {
    await runChecked(['nft', 'delete', 'table', 'inet', PREFIX]);
    for (let i = 0; !(await egress.enforcer.isInstalled()); i++) {
      assert.ok(i < 100, 'the watchdog re-installed the table');
      await sleep(100);
    }
    assert.equal(await tcp('a', addressOf('b')), 'ok');
    await egress.networks.remove(slots.b.slot);
    assert.equal(await tcp('a', addressOf('b')), 'failed');
    assert.deepEqual(await resolve('a', 'b.n1.internal'), { rcode: 'NXDOMAIN', answers: [] });
  });
});
