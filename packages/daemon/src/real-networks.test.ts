/**
 * Private networks (issue 12) between REAL gVisor sandboxes of a REAL daemon (a child process, prefix
 * `rxn`, egress enforcement on; the fake internet of the same prefix its only upstream), driven through
 * the SDK (`Network`, `sbx.networks`) and the CLI. A and B on n1, C on n2, D on none, each running a TCP
 * and UDP echo server that records its peers; A has an egress allowlist. Cases share these sandboxes and
 * run in order: reach and isolation by name and address (both directions, TCP and UDP, the egress log
 * naming both sandboxes), A's internet access still decided by its allowlist, live attach and detach
 * (reachable within a second; an open connection cut), pause/resume and a daemon restart (kill -9, table
 * deleted), three forks of A, and the CLI. Skipped, with the reason, when not root, without runsc/nft or
 * the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Network, Sandbox } from '@ramify/sdk';
import { runChecked } from '@ramify/network';
import type { EgressLogEntry } from '@ramify/contracts';
import { apiCaller, realRuntimeSkip } from './real-test-support.js';
import { SandboxShell, type Probe, type ProbeResult } from './real-egress-probe.js';
import { EvidenceRig } from './real-egress-rig.js';
import { NET, RULES, slotOf } from './real-egress-support.js';
import { ECHO_PORT, echoPeers, nameProbe, reachProbes, reached, startEcho } from './real-networks-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc', 'nft']);
const PREFIX = 'rxn';
const ONE_SECOND = 1_000;
const CLI_MAIN = join(dirname(fileURLToPath(import.meta.resolve('@ramify/cli'))), 'main.js');

const env = new EvidenceRig({ prefix: PREFIX, watch: { forward: 'rxnwfwd', input: 'rxnwin', rig: 'rxnwrig' }, dataDirPrefix: 'ramify-networks-', rootfs: rootfs ?? '' });
const call = apiCaller(() => env.daemon?.url, () => env.daemon?.key ?? '');
const shell = new SandboxShell(call, () => env.daemon?.url ?? '', () => env.daemon?.key ?? '');
/** SDK connection options (read on every call: a restarted daemon listens elsewhere). */
const conn = () => ({ apiUrl: env.daemon!.url, apiKey: env.daemon!.key, requestTimeoutMs: 600_000 });
const sbx = (id: string) => Sandbox.fromId(id, conn());

const ids = { a: '', b: '', c: '', d: '' };
const addr = { a: '', b: '', c: '', d: '' };

async function probe(id: string, probes: Probe[]): Promise<Record<string, ProbeResult>> {
  return shell.probe(id, probes);
}

/** The egress log of `id` once `ready` holds for it (entries are buffered into the store). */
async function egressLog(id: string, ready: (entries: EgressLogEntry[]) => boolean): Promise<EgressLogEntry[]> {
  let entries: EgressLogEntry[] = [];
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; await sleep(250)) {
    entries = await sbx(id).getEgressLog({ limit: 1000 });
    if (ready(entries)) break;
  }
  return entries;
}

/**
 * The core of the reach-and-isolation case, run again after each lifecycle step: A and B reach each
 * other by name over TCP and UDP; A reaches neither C nor D by address, C's name is NXDOMAIN for A; C and D
 * cannot reach A; the echo servers saw exactly that.
 */
async function checkReachAndIsolation(label: string): Promise<void> {
  const since = Date.now() - 1_000;
  const [fromA, fromB, fromC, fromD] = await Promise.all([
    probe(ids.a, [
      ...reachProbes('b', 'b.n1.internal'), nameProbe('name-b', 'b.n1.internal'), nameProbe('name-c', 'c.n2.internal'),
      ...reachProbes('c', addr.c), ...reachProbes('d', addr.d), ...reachProbes('c-name', 'c.n2.internal'),
    ]),
    probe(ids.b, [...reachProbes('a', 'a.n1.internal')]),
    probe(ids.c, [...reachProbes('a', addr.a), nameProbe('name-a', 'a.n1.internal')]),
    probe(ids.d, [...reachProbes('a', addr.a), ...reachProbes('b', addr.b), nameProbe('name-a', 'a.n1.internal')]),
  ]);
  const why = `${label}: A ${JSON.stringify(fromA)}\nB ${JSON.stringify(fromB)}\nC ${JSON.stringify(fromC)}\nD ${JSON.stringify(fromD)}\n${env.daemon?.log() ?? ''}`;
  assert.deepEqual(reached(fromA, 'b'), { tcp: true, udp: true }, `A reaches B by name: ${why}`);
  assert.deepEqual(reached(fromB, 'a'), { tcp: true, udp: true }, `B reaches A by name: ${why}`);
  assert.deepEqual([fromA['name-b']?.rcode, fromA['name-b']?.answers], ['NOERROR', [addr.b]], why);
  assert.equal(fromA['name-c']?.rcode, 'NXDOMAIN', `C's name is NXDOMAIN for A: ${why}`);
  for (const tag of ['c', 'd', 'c-name']) assert.deepEqual(reached(fromA, tag), { tcp: false, udp: false }, `A -> ${tag}: ${why}`);
  assert.deepEqual(reached(fromC, 'a'), { tcp: false, udp: false }, `C -> A: ${why}`);
  assert.deepEqual([reached(fromD, 'a'), reached(fromD, 'b')], [{ tcp: false, udp: false }, { tcp: false, udp: false }], `D -> A, B: ${why}`);
  for (const r of [fromC['name-a'], fromD['name-a']]) assert.equal(r?.rcode, 'NXDOMAIN', why);
  assert.deepEqual(new Set((await echoPeers(shell, ids.b, since)).map((p) => `${p.kind} ${p.peer}`)), new Set([`tcp ${addr.a}`, `udp ${addr.a}`]), `B's echo server saw A: ${why}`);
  assert.deepEqual(new Set((await echoPeers(shell, ids.a, since)).map((p) => `${p.kind} ${p.peer}`)), new Set([`tcp ${addr.b}`, `udp ${addr.b}`]), `A's echo server saw B only: ${why}`);
  for (const id of [ids.c, ids.d]) assert.deepEqual(await echoPeers(shell, id, since), [], `nobody reached ${id}: ${why}`);
  const passed = (await env.evidence!.collect()).passed;
  assert.deepEqual(passed.filter((f) => [addr.c, addr.d].includes(f.destination) || ([addr.c, addr.d].includes(f.source) && f.destination === addr.a)), [], `no packet to C or D got past the host filter: ${why}`);
}

describe('private networks between real gVisor sandboxes (daemon in a child process)', { skip, timeout: 900_000 }, () => {
  before(async () => {
    await env.start();
    await Network.create('n1', conn());
    await Network.create('n2', conn());
    const make = async (networks: Array<{ network: string; alias?: string }>, egress?: string[]) =>
      (await Sandbox.create({ ...conn(), timeoutMs: 1_800_000, networks, ...(egress ? { egress } : {}) })).sandboxId;
    [ids.a, ids.b, ids.c, ids.d] = await Promise.all([
      make([{ network: 'n1', alias: 'a' }], RULES), make([{ network: 'n1', alias: 'b' }]), make([{ network: 'n2', alias: 'c' }]), make([]),
    ]);
    for (const key of ['a', 'b', 'c', 'd'] as const) {
      addr[key] = (await slotOf(env.dataDir, PREFIX, ids[key])).slotAddress;
      await startEcho(shell, ids[key]);
    }
  });

  after(() => env.stop());

  test('A and B (n1) reach each other by name over TCP and UDP; C (n2) and D (none) are unreachable by address and name, both ways; the egress log names both sandboxes', async () => {
    await env.evidence!.clear();
    await checkReachAndIsolation('first daemon');
    const log = await egressLog(ids.a, (es) => es.some((e) => e.peer?.sandboxId === ids.b && e.verdict === 'allowed') && es.some((e) => e.peer?.sandboxId === ids.c && e.verdict === 'denied'));
    const toB = log.find((e) => e.peer?.sandboxId === ids.b && e.verdict === 'allowed');
    assert.deepEqual(toB && [toB.destination, toB.peer?.network, toB.name], [addr.b, 'n1', 'b.n1.internal'], JSON.stringify(log));
    const toC = log.find((e) => e.peer?.sandboxId === ids.c && e.verdict === 'denied');
    assert.deepEqual(toC && [toC.destination, toC.peer?.network], [addr.c, null], JSON.stringify(log));
    const cLog = await egressLog(ids.c, (es) => es.some((e) => e.peer?.sandboxId === ids.a));
    assert.ok(cLog.some((e) => e.peer?.sandboxId === ids.a && e.verdict === 'denied'), `C's refused connection to A, naming A: ${JSON.stringify(cLog)}`);
  });

  test("A's egress allowlist still decides its internet access exactly as before; B's open egress is untouched", async () => {
    await env.evidence!.clear();
    assert.deepEqual((await call('GET', `/v1/sandboxes/${ids.a}/egress`)).json.rules, RULES);
    const [a, b] = await Promise.all([
      probe(ids.a, [
        { id: 'ok-http', kind: 'http', host: 'allowed.test', hostHeader: 'allowed.test' },
        { id: 'ok-ipport', kind: 'tcp', host: NET.echo, port: 8080, send: 'ping' },
        { id: 'denied-port', kind: 'tcp', host: NET.echo, port: 9090, send: 'ping' },
        { id: 'denied-name', kind: 'resolve', name: 'denied.test' },
        { id: 'denied-address', kind: 'tcp', host: NET.denied, port: 853, send: 'x' },
      ]),
      probe(ids.b, [{ id: 'open', kind: 'tcp', host: NET.denied, port: 853, send: 'x' }, { id: 'open-name', kind: 'resolve', name: 'denied.test' }]),
    ]);
    assert.equal(a['ok-http']?.status, 200, JSON.stringify(a));
    assert.equal(a['ok-ipport']?.recv, 'ping', JSON.stringify(a));
    for (const id of ['denied-port', 'denied-name', 'denied-address']) assert.equal(a[id]?.ok, false, `${id}: ${JSON.stringify(a)}`);
    assert.equal(b.open?.recv, 'x', `B (open egress) still reaches the internet: ${JSON.stringify(b)}`);
    assert.deepEqual(b['open-name']?.addresses, [NET.denied]);
  });

  test('live: attaching C to n1 lets A reach it within a second; detaching cuts an open connection within a second', async (t) => {
    await shell.live(ids.a, 'poll', { host: 'c.n1.internal', port: ECHO_PORT }, '/tmp/poll-c', 20);
    await sleep(1_000);
    assert.deepEqual(await shell.liveLines(ids.a, '/tmp/poll-c'), [], 'C is not reachable before the attach');
    const attached = await sbx(ids.c).networks.attach('n1', { alias: 'c' });
    const attachedAt = Date.now();
    assert.equal(attached.hostname, 'c.n1.internal');
    let open: Array<{ word: string; atMs: number }> = [];
    for (const deadline = Date.now() + 10_000; open.length === 0 && Date.now() < deadline; await sleep(200)) open = await shell.liveLines(ids.a, '/tmp/poll-c');
    assert.equal(open.length, 1, 'A reached C by name after the attach');
    assert.ok(open[0]!.atMs <= attachedAt + ONE_SECOND, `A reached C ${open[0]!.atMs - attachedAt} ms after the attach returned`);
    t.diagnostic(`attach to reachable (by name, 50 ms polls): ${open[0]!.atMs - attachedAt} ms after the call returned`);

    await shell.live(ids.a, 'hold', { host: 'c.n1.internal', port: ECHO_PORT }, '/tmp/hold-c', 8);
    for (const deadline = Date.now() + 10_000; !(await shell.liveLines(ids.a, '/tmp/hold-c')).some((l) => l.word === 'echo'); await sleep(200)) {
      assert.ok(Date.now() < deadline, 'the held connection never echoed');
    }
    await sbx(ids.c).networks.detach('n1');
    const detachedAt = Date.now();
    await sleep(ONE_SECOND + 1_500);
    const lines = await shell.liveLines(ids.a, '/tmp/hold-c');
    assert.deepEqual(lines.filter((l) => l.word === 'echo' && l.atMs > detachedAt + ONE_SECOND), [], `the connection still echoed more than 1 s after the detach returned (at ${detachedAt})`);
    t.diagnostic(`detach: last echo ${Math.max(...lines.filter((l) => l.word === 'echo').map((l) => l.atMs)) - detachedAt} ms after the call returned`);
    assert.equal((await probe(ids.a, [nameProbe('gone', 'c.n1.internal')])).gone?.rcode, 'NXDOMAIN');
    assert.deepEqual((await sbx(ids.c).networks.list()).map((n) => n.hostname), ['c.n2.internal']);
    await sleep(6_000); // let the hold end (its socket must not be established at the pause below)
  });

  test('pause/resume of A, then kill -9 of the daemon and a deleted table: the same reach and isolation hold', async () => {
    const paused = await sbx(ids.a).pause();
    assert.equal(paused.state, 'paused');
    assert.deepEqual((await sbx(ids.a).networks.list()).map((n) => n.hostname), ['a.n1.internal'], 'membership survives the pause');
    await sbx(ids.a).resume();
    await env.evidence!.clear();
    await checkReachAndIsolation('after pause/resume of A');

    await env.daemon!.kill9();
    await runChecked(['nft', 'delete', 'table', 'inet', PREFIX]);
    await env.daemon!.start();
    assert.equal((await sbx(ids.a).getInfo()).state, 'running');
    await env.evidence!.clear();
    await checkReachAndIsolation('after kill -9 and a deleted table');
    const r = await probe(ids.a, [{ id: 'ok', kind: 'http', host: 'allowed.test', hostHeader: 'allowed.test' }, { id: 'no', kind: 'tcp', host: NET.denied, port: 853, send: 'x' }]);
    assert.deepEqual([r.ok?.status, r.no?.ok], [200, false], `A's allowlist after the restart: ${JSON.stringify(r)}`);
  });

  test('three forks of A find each other, A and B by name (a-1, a-2, a-3); C still cannot resolve them', async () => {
    const forks = await sbx(ids.a).fork({ count: 3 });
    const kids = forks.map((f) => f.sandboxId);
    const names = await Promise.all(kids.map(async (k) => (await sbx(k).networks.list()).map((n) => n.hostname)));
    assert.deepEqual(names, [['a-1.n1.internal'], ['a-2.n1.internal'], ['a-3.n1.internal']]);
    const targets = ['a-1', 'a-2', 'a-3', 'a', 'b'];
    const results = await Promise.all(kids.map((k, i) => probe(k, targets.filter((x) => x !== `a-${i + 1}`).flatMap((x) => reachProbes(x, `${x}.n1.internal`)))));
    for (const [i, r] of results.entries()) {
      for (const x of targets.filter((y) => y !== `a-${i + 1}`)) assert.deepEqual(reached(r, x), { tcp: true, udp: true }, `a-${i + 1} -> ${x}: ${JSON.stringify(r)}`);
    }
    const fromB = await probe(ids.b, kids.flatMap((_, i) => reachProbes(`a-${i + 1}`, `a-${i + 1}.n1.internal`)));
    for (const i of [1, 2, 3]) assert.deepEqual(reached(fromB, `a-${i}`), { tcp: true, udp: true }, JSON.stringify(fromB));
    const fromC = await probe(ids.c, [nameProbe('kid', 'a-1.n1.internal')]);
    assert.equal(fromC.kid?.rcode, 'NXDOMAIN');
    await Promise.all(kids.map((k) => sbx(k).kill()));
  });

  test('the CLI: network create/list/get/rm, sandbox network attach/detach; rm of a network in use names its sandbox; no key is refused', async () => {
    const cli = (args: string[], key = env.daemon!.key) => new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [CLI_MAIN, ...args], { env: { ...process.env, RAMIFY_API_URL: env.daemon!.url, RAMIFY_API_KEY: key, RAMIFY_HOME: env.dataDir }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.on('error', reject);
      child.on('exit', (code) => resolve({ code, stdout, stderr }));
    });
    assert.equal((await cli(['network', 'create', 'n3'])).code, 0);
    const bad = await cli(['network', 'create', 'Bad_Name']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /VALIDATION_FAILED/);
    const attach = await cli(['sandbox', 'network', 'attach', ids.d, 'n3', '--alias', 'dee']);
    assert.deepEqual([attach.code, attach.stdout.trim()], [0, 'dee.n3.internal'], attach.stderr);
    const inUse = await cli(['network', 'rm', 'n3']);
    assert.equal(inUse.code, 1);
    assert.ok(inUse.stderr.includes('NETWORK_IN_USE') && inUse.stderr.includes(ids.d), inUse.stderr);
    const got = JSON.parse((await cli(['--json', 'network', 'get', 'n3'])).stdout) as { members: Array<{ sandboxId: string; hostname: string }> };
    assert.deepEqual(got.members.map((m) => [m.sandboxId, m.hostname]), [[ids.d, 'dee.n3.internal']]);
    const unauthorized = await cli(['network', 'list'], 'rmf_notakeynotakeynotakeynotakeynotakeyno');
    assert.equal(unauthorized.code, 1);
    assert.match(unauthorized.stderr, /UNAUTHORIZED/);
    assert.equal((await cli(['sandbox', 'network', 'detach', ids.d, 'n3'])).code, 0);
    assert.equal((await cli(['network', 'rm', 'n3'])).code, 0);
    const list = JSON.parse((await cli(['--json', 'network', 'list'])).stdout) as { networks: Array<{ name: string }> };
    assert.deepEqual(list.networks.map((n) => n.name), ['n1', 'n2']);
  });
});
