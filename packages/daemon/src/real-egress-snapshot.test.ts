/**
 * Snapshots carry the egress policy (issue 9), from inside REAL gVisor sandboxes of a REAL daemon (a
 * child process, prefix `rxs`, enforcement on) with the fake internet (prefix `rxs`) as the only
 * destination: a sandbox created from a named snapshot of a deny-all sandbox reaches nothing (proven by
 * the fake internet's server and DNS logs, a packet log in its namespace and a packet log on the host
 * behind the daemon's filter), one created from a snapshot of an allowlist sandbox has that allowlist
 * (allowed destinations work, others reach nothing), and a create request's `egress` replaces the
 * snapshot's. Skipped, with the reason, when not root, without runsc/nft, or without the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { apiCaller, realRuntimeSkip } from './real-test-support.js';
import { SandboxShell, type Probe, type ProbeResult } from './real-egress-probe.js';
import { assertNothingReached, dnsNames } from './real-egress-evidence.js';
import { EvidenceRig } from './real-egress-rig.js';
import { NET, slotElements, slotOf } from './real-egress-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc', 'nft']);

const PREFIX = 'rxs';
const ALLOWLIST = ['allowed.test', '198.51.100.7:8080'];

const env = new EvidenceRig({ prefix: PREFIX, watch: { forward: 'rxswfwd', input: 'rxswin', rig: 'rxswrig' }, dataDirPrefix: 'ramify-egress-snapshot-', rootfs: rootfs ?? '' });
const call = apiCaller(() => env.daemon?.url, () => env.daemon?.key ?? '');
const shell = new SandboxShell(call, () => env.daemon?.url ?? '', () => env.daemon?.key ?? '');

/** Create a sandbox (`body` as the API takes it); resolves with its id. */
async function create(body: Record<string, unknown>): Promise<string> {
  const r = await call('POST', '/v1/sandboxes', { timeoutMs: 1_800_000, ...body });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  return r.json.id as string;
}

/** Take the named snapshot `name` of running sandbox `id` (before it made any connection); resolves with the snapshot's info. */
async function snapshot(id: string, name: string): Promise<{ id: string; egress: unknown }> {
  const r = await call('POST', `/v1/sandboxes/${id}/snapshots`, { name });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  return r.json;
}

async function policyOf(id: string): Promise<{ mode: string; rules: string[] }> {
  const { mode, rules } = (await call('GET', `/v1/sandboxes/${id}/egress`)).json;
  return { mode, rules };
}

/** Every destination a sandbox might try: names (allowed and denied), hard-coded addresses, other ports, ICMP, another resolver. */
const EVERYTHING: Probe[] = [
  { id: 'resolve-allowed', kind: 'resolve', name: 'allowed.test' },
  { id: 'resolve-denied', kind: 'resolve', name: 'denied.test' },
  { id: 'http-name', kind: 'http', host: 'allowed.test', hostHeader: 'allowed.test' },
  { id: 'http-address', kind: 'http', host: NET.allowed, hostHeader: 'allowed.test' },
  { id: 'tls-address', kind: 'tls', host: NET.allowed, sni: 'allowed.test' },
  { id: 'tls-pkg', kind: 'tls', host: NET.pkg, sni: 'a.pkg.test' },
  { id: 'echo-8080', kind: 'tcp', host: NET.echo, port: 8080, send: 'ping' },
  { id: 'echo-9090', kind: 'tcp', host: NET.echo, port: 9090, send: 'ping' },
  { id: 'echo-named', kind: 'tcp', host: NET.echoNamed, port: 8080, send: 'ping' },
  { id: 'dot', kind: 'tcp', host: NET.dns, port: 853, send: 'x' },
  { id: 'udp-denied', kind: 'udp', host: NET.denied, port: 853, send: 'x' },
  { id: 'icmp', kind: 'icmp', host: NET.allowed },
  { id: 'resolver-udp', kind: 'dns', server: NET.dns, name: 'allowed.test' },
  { id: 'resolver-tcp', kind: 'dns', server: NET.dns, name: 'allowed.test', transport: 'tcp' },
];

/** Run {@link EVERYTHING} from `id` and assert that none of it got out: no answer, no connection, nothing in the fake internet or past the host's filter. */
async function assertNothingGetsOut(id: string, label: string): Promise<void> {
  await env.evidence!.clear();
  const r = await shell.probe(id, EVERYTHING);
  const ev = await env.evidence!.collect();
  const why = `${label}: ${JSON.stringify(r)}\n${env.daemon?.log() ?? ''}`;
  const at = (probe: string): ProbeResult => r[probe] ?? assert.fail(`no result for ${probe}`);
  for (const p of EVERYTHING) {
    const result = at(p.id);
    if (p.kind === 'dns') {
      // Port 53 anywhere reaches the policy resolver, which answers every name NXDOMAIN.
      assert.deepEqual(result.answers ?? [], [], `${label}: ${p.id} answered: ${why}`);
      if (result.ok) assert.equal(result.rcode, 'NXDOMAIN', `${label}: ${p.id}: ${why}`);
    } else {
      // (The SNI/Host proxy answers a refused plain-HTTP request itself, with 403.)
      assert.ok(!result.ok || result.status === 403, `${label}: '${p.id}' got through: ${JSON.stringify(result)}`);
    }
  }
  assert.deepEqual(ev.events, [], `${label}: the fake internet's servers saw something: ${why}`);
  assert.deepEqual(ev.rigFlows, [], `${label}: packets arrived in the fake internet: ${why}`);
  assert.deepEqual(ev.passed, [], `${label}: packets got past the host's filter: ${why}`);
  assert.deepEqual(dnsNames(ev), [], `${label}: a name was asked upstream`);
  assert.equal(ev.ipv6Passed, 0, `${label}: IPv6 got past the host's filter`);
}

/** The static set elements of the sandbox's slot, by set name (`spoof`, `open`, `net`, `netport`). */
async function slotSets(id: string): Promise<string[]> {
  const elements = await slotElements(PREFIX, (await slotOf(env.dataDir, PREFIX, id)).slotAddress);
  return elements.map((e) => e.split(' ')[0] ?? '');
}

describe('snapshots carry the egress policy: real gVisor sandboxes created from named snapshots (daemon in a child process)', { skip, timeout: 600_000 }, () => {
  before(() => env.start());
  after(() => env.stop());

  test('a sandbox created from a named snapshot of a deny-all sandbox is deny-all and reaches nothing of the fake internet', async () => {
    const source = await create({ egress: { mode: 'deny-all' } });
    const snap = await snapshot(source, 'rxs-sealed');
    assert.deepEqual(snap.egress, { mode: 'deny-all', rules: [] });
    assert.deepEqual((await call('GET', '/v1/snapshots/rxs-sealed')).json.egress, { mode: 'deny-all', rules: [] });

    const child = await create({ snapshot: 'rxs-sealed' });
    assert.deepEqual(await policyOf(child), { mode: 'deny-all', rules: [] });
    assert.deepEqual(await slotSets(child), ['spoof'], 'nothing in the host table opens anything to its slot');
    await assertNothingGetsOut(child, 'from the deny-all snapshot');
    await assertNothingGetsOut(source, 'the deny-all source after its snapshot');
  });

  test('a sandbox created from a named snapshot of an allowlist sandbox has that allowlist: allowed destinations work, the rest reaches nothing', async () => {
    const source = await create({ egress: ALLOWLIST });
    assert.deepEqual((await snapshot(source, 'rxs-allow')).egress, { mode: 'allowlist', rules: ALLOWLIST });
    // A later change to the source does not change what the snapshot gives.
    assert.equal((await call('PUT', `/v1/sandboxes/${source}/egress`, { mode: 'deny-all' })).status, 200);

    const child = await create({ snapshot: 'rxs-allow' });
    assert.deepEqual(await policyOf(child), { mode: 'allowlist', rules: ALLOWLIST });
    assert.ok((await slotSets(child)).includes('netport'), 'the address rule is in the host table for its slot');
    await env.evidence!.clear();
    assert.deepEqual((await shell.probe(child, [{ id: 'pre', kind: 'resolve', name: 'allowed.test' }])).pre?.addresses, [NET.allowed]);
    const r = await shell.probe(child, [
      { id: 'ok-http', kind: 'http', host: 'allowed.test', hostHeader: 'allowed.test' },
      { id: 'ok-echo', kind: 'tcp', host: NET.echo, port: 8080, send: 'ping' },
      { id: 'denied-name', kind: 'resolve', name: 'denied.test' },
      { id: 'denied-address', kind: 'http', host: NET.denied, hostHeader: 'denied.test' },
      { id: 'denied-port', kind: 'tcp', host: NET.echo, port: 9090, send: 'ping' },
    ]);
    const ev = await env.evidence!.collect();
    const why = JSON.stringify(r);
    assert.equal(r['ok-http']?.status, 200, why);
    assert.equal(r['ok-echo']?.recv, 'ping', why);
    assert.equal(r['denied-name']?.ok, false, why);
    assert.ok(!r['denied-address']?.ok || r['denied-address'].status === 403, why);
    assert.equal(r['denied-port']?.ok, false, why);
    assertNothingReached(ev, NET.denied, undefined, 'from the allowlist snapshot: a denied address');
    assertNothingReached(ev, NET.echo, 9090, 'from the allowlist snapshot: another port of an allowed address');
    assert.ok(!dnsNames(ev).includes('denied.test'), 'the denied name was never asked upstream');
  });

  test("a create request's egress replaces the snapshot's, both ways", async () => {
    const opened = await create({ snapshot: 'rxs-sealed', egress: ['198.51.100.7:8080'] });
    assert.deepEqual(await policyOf(opened), { mode: 'allowlist', rules: ['198.51.100.7:8080'] });
    assert.equal((await shell.probe(opened, [{ id: 'echo', kind: 'tcp', host: NET.echo, port: 8080, send: 'ping' }])).echo?.recv, 'ping');

    const sealed = await create({ snapshot: 'rxs-allow', egress: { mode: 'deny-all' } });
    assert.deepEqual(await policyOf(sealed), { mode: 'deny-all', rules: [] });
    await assertNothingGetsOut(sealed, 'the allowlist snapshot with a deny-all request');
  });
});
