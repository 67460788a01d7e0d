/**
 * Egress policies changing under REAL gVisor sandboxes of a REAL daemon (a child process, prefix `rxb`,
 * enforcement on) with the fake internet (prefix `rxb`) as the only destination: a fork's own copy of
 * the policy and its own egress log, live updates (a long-running connection cut within one second of
 * its rule's removal, a new rule working within one second of the PUT), and bad input through the real
 * API leaving the enforced policy (the host's nftables elements) unchanged. Skipped, with the reason,
 * when not root, without runsc/nft, or without the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NamespaceNetwork } from '@ramify/network';
import { FakeInternet } from '@ramify/network/testing';
import { apiCaller, realRuntimeSkip } from './real-test-support.js';
import { SandboxShell } from './real-egress-probe.js';
import { assertSlotRangeFree, ChildDaemon, NET, PacketLog, RIG_ECHO, RIG_WEB, RIG_ZONE, flowsTo, forceCleanup, leftovers, slotElements, slotOf } from './real-egress-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc', 'nft']);

const PREFIX = 'rxb';
const WATCH_FORWARD = 'rxbwfwd';
/** How long after a rule change the issue allows for it to take effect. */
const ONE_SECOND = 1_000;

let dataDir = '';
let rig: FakeInternet | undefined;
let daemon: ChildDaemon | undefined;
let forward: PacketLog | undefined;
const call = apiCaller(() => daemon?.url, () => daemon?.key ?? '');
const shell = new SandboxShell(call, () => daemon?.url ?? '', () => daemon?.key ?? '');
let parent = '';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function putEgress(id: string, rules: string[]): Promise<number> {
  const r = await call('PUT', `/v1/sandboxes/${id}/egress`, { rules });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return Date.now();
}
const rulesOf = async (id: string): Promise<string[]> => (await call('GET', `/v1/sandboxes/${id}/egress`)).json.rules;

/** Egress log entries of `id`, polled until `ready` holds for them (the log is written asynchronously) or 10 s pass. */
async function egressLog(id: string, ready: (entries: LogEntry[]) => boolean): Promise<LogEntry[]> {
  let entries: LogEntry[] = [];
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(250)) {
    const r = await call('GET', `/v1/sandboxes/${id}/egress/log?limit=1000`);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    entries = r.json.entries;
    if (ready(entries)) break;
  }
  return entries;
}
interface LogEntry { protocol: string; destination: string; port: number | null; name: string | null; verdict: string; rule: string | null }
const deniedName = (name: string) => (e: LogEntry) => e.protocol === 'dns' && e.name === name && e.verdict === 'denied';
const deniedConnection = (address: string, port: number) => (e: LogEntry) => e.protocol === 'tcp' && e.destination === address && e.port === port && e.verdict === 'denied';

describe('egress policies under real gVisor sandboxes: forks, live updates, bad input (daemon in a child process)', { skip, timeout: 600_000 }, () => {
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-egress-policy-'));
    await new NamespaceNetwork({ prefix: PREFIX }).destroyAll();
    await assertSlotRangeFree(PREFIX);
    rig = await FakeInternet.start({ prefix: PREFIX, web: RIG_WEB, echo: RIG_ECHO, zone: RIG_ZONE, dns: { address: NET.dns } });
    forward = await PacketLog.start({ table: WATCH_FORWARD, hook: 'forward', match: `iifname "${PREFIX}h*"` });
    daemon = new ChildDaemon({ dataDir, prefix: PREFIX, upstream: NET.dns, rootfs: rootfs as string });
    await daemon.start();
    const created = await call('POST', '/v1/sandboxes', { egress: ['allowed.test', '198.51.100.7:8080', 'echo.test'], timeoutMs: 1_800_000 });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    parent = created.json.id;
  });

  after(async () => {
    await daemon?.stop();
    await forward?.stop();
    await rig?.teardown();
    await forceCleanup(PREFIX, dataDir);
    const left = await leftovers(PREFIX, dataDir, [WATCH_FORWARD]);
    await rm(dataDir, { recursive: true, force: true });
    assert.deepEqual(left, [], 'every namespace, link, table and container the suite made is gone');
  });

  let fork = '';

  test("a fork is governed by its own copy of the policy: changing the parent's leaves the fork's, and the reverse; traffic leaves under each one's own slot", async () => {
    // Fork before the parent made any TCP connection (a connected endpoint blocks the checkpoint).
    const forked = await call('POST', `/v1/sandboxes/${parent}/fork`, { count: 1 });
    assert.equal(forked.status, 201, JSON.stringify(forked.json));
    fork = forked.json.sandboxes[0].id;
    assert.deepEqual(await rulesOf(fork), ['allowed.test', '198.51.100.7:8080', 'echo.test']);
    const parentSlot = (await slotOf(dataDir, PREFIX, parent)).slotAddress;
    const forkSlot = (await slotOf(dataDir, PREFIX, fork)).slotAddress;
    assert.notEqual(parentSlot, forkSlot);

    await putEgress(parent, ['198.51.100.7:8080']);
    assert.deepEqual(await rulesOf(fork), ['allowed.test', '198.51.100.7:8080', 'echo.test'], "the parent's PUT left the fork's policy");
    await forward!.clear();
    const [p1, f1] = await Promise.all([
      shell.probe(parent, [
        { id: 'echo', kind: 'tcp', host: NET.echo, port: 8080, send: 'p' },
        { id: 'named', kind: 'resolve', name: 'echo.test' },
        { id: 'http', kind: 'http', host: NET.allowed, hostHeader: 'allowed.test' },
      ]),
      shell.probe(fork, [
        { id: 'echo', kind: 'tcp', host: NET.echo, port: 8080, send: 'f' },
        { id: 'named', kind: 'tcp', host: 'echo.test', port: 8080, send: 'f' },
        { id: 'http', kind: 'http', host: 'allowed.test', hostHeader: 'allowed.test' },
      ]),
    ]);
    assert.equal(p1.echo?.recv, 'p', JSON.stringify(p1));
    assert.equal(p1.named?.ok, false, `the parent lost echo.test: ${JSON.stringify(p1)}`);
    assert.ok(!p1.http?.ok || p1.http.status === 403, `the parent lost allowed.test: ${JSON.stringify(p1)}`);
    assert.deepEqual([f1.echo?.recv, f1.named?.recv, f1.http?.status], ['f', 'f', 200], `the fork kept its rules: ${JSON.stringify(f1)}`);
    const flows = await forward!.flows();
    assert.ok(flowsTo(flows, NET.echo, 8080).some((f) => f.source === forkSlot), "the fork's traffic left under its own slot address");
    assert.ok(flowsTo(flows, NET.echo, 8080).some((f) => f.source === parentSlot), "the parent's traffic left under its own slot address");
    assert.deepEqual(flowsTo(flows, NET.echoNamed).filter((f) => f.source !== forkSlot), [], 'echo.test was reached only by the fork');

    await putEgress(fork, ['allowed.test']);
    assert.deepEqual(await rulesOf(parent), ['198.51.100.7:8080'], "the fork's PUT left the parent's policy");
    const [p2, f2] = await Promise.all([
      shell.probe(parent, [{ id: 'echo', kind: 'tcp', host: NET.echo, port: 8080, send: 'p' }]),
      shell.probe(fork, [{ id: 'echo', kind: 'tcp', host: NET.echo, port: 8080, send: 'f' }]),
    ]);
    assert.equal(p2.echo?.recv, 'p', JSON.stringify(p2));
    assert.equal(f2.echo?.ok, false, `the fork's new policy closed the address rule: ${JSON.stringify(f2)}`);
  });

  test("a fork's verdicts show up in its own egress log, the parent's in the parent's", async (t) => {
    assert.ok(fork, 'the fork test ran');
    await Promise.all([
      shell.probe(fork, [
        { id: 'name', kind: 'resolve', name: 'denied.test' },
        { id: 'conn', kind: 'tcp', host: NET.denied, port: 853, timeoutS: 2 },
      ]),
      shell.probe(parent, [
        { id: 'name', kind: 'resolve', name: 'doh.test' },
        { id: 'conn', kind: 'tcp', host: NET.doh, port: 853, timeoutS: 2 },
      ]),
    ]);
    const forkLog = await egressLog(fork, (es) => es.some(deniedName('denied.test')) && es.some(deniedConnection(NET.denied, 853)));
    const parentLog = await egressLog(parent, (es) => es.some(deniedName('doh.test')) && es.some(deniedConnection(NET.doh, 853)));
    const show = `fork: ${JSON.stringify(forkLog)}\nparent: ${JSON.stringify(parentLog)}`;
    t.diagnostic(`egress log entries: fork ${forkLog.length}, parent ${parentLog.length}; e.g. ${JSON.stringify(forkLog.find(deniedConnection(NET.denied, 853)) ?? null)}`);
    assert.ok(forkLog.some(deniedName('denied.test')), `the fork's denied DNS name is in its log: ${show}`);
    assert.ok(forkLog.some(deniedConnection(NET.denied, 853)), `the fork's denied connection is in its log: ${show}`);
    assert.ok(parentLog.some(deniedName('doh.test')), `the parent's denied DNS name is in its log: ${show}`);
    assert.ok(parentLog.some(deniedConnection(NET.doh, 853)), `the parent's denied connection is in its log: ${show}`);
    assert.ok(!parentLog.some(deniedName('denied.test')) && !parentLog.some(deniedConnection(NET.denied, 853)), `nothing of the fork's in the parent's log: ${show}`);
    assert.ok(!forkLog.some(deniedName('doh.test')) && !forkLog.some(deniedConnection(NET.doh, 853)), `nothing of the parent's in the fork's log: ${show}`);
  });

  test('live update: a long-running connection is cut within one second of its rule being removed (others stay up); a new rule works within one second of the PUT', async (t) => {
    await putEgress(parent, ['198.51.100.7:8080', 'echo.test', 'allowed.test']);
    await shell.live(parent, 'hold', { host: NET.echo, port: 8080 }, '/tmp/hold-ip', 60);
    await shell.live(parent, 'hold', { host: 'echo.test', port: 8080 }, '/tmp/hold-name', 60);
    const echoing = async (out: string, afterMs: number): Promise<boolean> => (await shell.liveLines(parent, out)).some((l) => l.word === 'echo' && l.atMs > afterMs);
    for (const deadline = Date.now() + 10_000; !((await echoing('/tmp/hold-ip', 0)) && (await echoing('/tmp/hold-name', 0))); await sleep(200)) {
      assert.ok(Date.now() < deadline, `the held connections never echoed: ${JSON.stringify(await shell.liveLines(parent, '/tmp/hold-ip'))} ${JSON.stringify(await shell.liveLines(parent, '/tmp/hold-name'))}`);
    }

    const cutIp = await putEgress(parent, ['echo.test', 'allowed.test']);
    await sleep(ONE_SECOND + 1_500);
    const ip = await shell.liveLines(parent, '/tmp/hold-ip');
    const lateIp = ip.filter((l) => l.word === 'echo' && l.atMs > cutIp + ONE_SECOND);
    assert.deepEqual(lateIp, [], `the connection its rule alone allowed still echoed more than 1 s after the PUT returned (at ${cutIp})`);
    t.diagnostic(`address rule removed: last echo ${Math.max(...ip.filter((l) => l.word === 'echo').map((l) => l.atMs)) - cutIp} ms after the PUT returned`);
    assert.ok(await echoing('/tmp/hold-name', cutIp + ONE_SECOND), 'the connection another rule allows stays up');

    const cutName = await putEgress(parent, ['allowed.test']);
    await sleep(ONE_SECOND + 1_500);
    const name = await shell.liveLines(parent, '/tmp/hold-name');
    assert.deepEqual(name.filter((l) => l.word === 'echo' && l.atMs > cutName + ONE_SECOND), [], `the connection to a name whose rule was removed still echoed more than 1 s after the PUT (at ${cutName})`);
    t.diagnostic(`name rule removed: last echo ${Math.max(...name.filter((l) => l.word === 'echo').map((l) => l.atMs)) - cutName} ms after the PUT returned`);

    await shell.live(parent, 'poll', { host: NET.echo, port: 9090 }, '/tmp/poll-ip', 15);
    await shell.live(parent, 'poll', { host: 'denied.test', port: 853 }, '/tmp/poll-name', 15);
    await sleep(1_000);
    assert.deepEqual([...(await shell.liveLines(parent, '/tmp/poll-ip')), ...(await shell.liveLines(parent, '/tmp/poll-name'))], [], 'nothing opened before the PUT');
    const opened = await putEgress(parent, ['allowed.test', '198.51.100.7:9090', 'denied.test']);
    let polls: Array<{ word: string; atMs: number }> = [];
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(250)) {
      polls = [...(await shell.liveLines(parent, '/tmp/poll-ip')), ...(await shell.liveLines(parent, '/tmp/poll-name'))];
      if (polls.length === 2) break;
    }
    assert.equal(polls.length, 2, `both new rules opened (address rule and name rule): ${JSON.stringify(polls)}`);
    for (const p of polls) assert.ok(p.atMs <= opened + ONE_SECOND, `a new rule worked ${p.atMs - opened} ms after the PUT returned`);
    t.diagnostic(`new rules worked ${polls.map((p) => p.atMs - opened).join(' and ')} ms after the PUT returned`);
  });

  test('bad input through the real API: *.com, a * in the middle, ports 0 and 70000, malformed CIDRs, 10,000 rules: a 400 naming the rule, the enforced policy unchanged', async () => {
    const slotAddress = (await slotOf(dataDir, PREFIX, parent)).slotAddress;
    const before = await call('GET', `/v1/sandboxes/${parent}/egress`);
    const enforced = await slotElements(PREFIX, slotAddress);
    assert.ok(enforced.some((e) => e.startsWith('netport')), `the address rule is enforced: ${enforced.join('\n')}`);
    const bad: Array<[string[], number]> = [
      [['allowed.test', '*.com'], 1],
      [['a.*.pkg.test'], 0],
      [['allowed.test:0'], 0],
      [['allowed.test:70000'], 0],
      [['10.0.0.0/33'], 0],
      [['10.0.0.1/24'], 0],
      [['10.0.0.0/'], 0],
      [['10.0.0/8'], 0],
      [['300.1.1.1/8'], 0],
      [['198.51.100.0/24/8'], 0],
      [Array.from({ length: 10_000 }, (_, i) => `h${i}.pkg.test`), 1000],
    ];
    for (const [rules, index] of bad) {
      const r = await call('PUT', `/v1/sandboxes/${parent}/egress`, { rules });
      assert.equal(r.status, 400, JSON.stringify(r.json).slice(0, 500));
      assert.equal(r.json.error.code, 'VALIDATION_FAILED');
      assert.equal(r.json.error.details.rule, rules[index]);
      assert.ok(r.json.error.message.includes(`'${rules[index]}'`), `the message names the rule: ${r.json.error.message}`);
      assert.deepEqual((await call('GET', `/v1/sandboxes/${parent}/egress`)).json, before.json, `stored policy unchanged after ${rules[index]}`);
    }
    assert.deepEqual(await slotElements(PREFIX, slotAddress), enforced, "the host's set elements for the slot are unchanged");
    const count = (await call('GET', '/v1/sandboxes')).json.sandboxes.length;
    const refused = await call('POST', '/v1/sandboxes', { egress: ['allowed.test', '*.co.uk'] });
    assert.equal(refused.status, 400);
    assert.equal(refused.json.error.details.rule, '*.co.uk');
    assert.equal((await call('GET', '/v1/sandboxes')).json.sandboxes.length, count, 'a bad create starts nothing');
    const r = await shell.probe(parent, [{ id: 'still', kind: 'tcp', host: NET.echo, port: 9090, send: 'ok' }]);
    assert.equal(r.still?.recv, 'ok', `the policy in force still works: ${JSON.stringify(r)}`);
  });
});
