/**
 * Events, webhooks, metrics and traces (issue 15, items 4b, 5, 7) end to end: a REAL daemon (`serve()`
 * in-process, prefix `rmev`, gVisor) with its metrics listener and an OTLP endpoint on loopback, two
 * teams made through the CLI, and real HTTP peers on loopback: a webhook receiver answering 200, one
 * answering 500 then 200, one that never answers, and an OTLP/HTTP collector. A lifecycle (create, exec,
 * pause, resume, fork, snapshot, kill) makes its events in order, listed, streamed and delivered signed;
 * the other team sees none of them; the hung receiver does not hold up an API call; /metrics parses and
 * its counters move (a command counted once whichever way it ran); the create is one trace with its phase
 * spans nested (create → start → bringUp → restore, ...) and reads make none. Skipped, with the reason, when not
 * root or without the tools.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Events, Sandbox, verifyWebhookSignature, type SandboxEvent } from '@ramify/sdk';
import { serve, type RamifyServer } from './serve.js';
import { apiCaller, realRuntimeSkip, registerRootfsTemplate, stopRealDaemon, until, type ApiReply } from './real-test-support.js';
import { cli } from './real-ssh-support.js';
import { parseMetrics, sample, spansOf, startDnsUpstream, startPeer, type DnsUpstreamPeer, type Peer } from './real-events-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs);
const PREFIX = 'rmev';
const TEMPLATE = 'tpl_rmev';

let dataDir: string;
let server: RamifyServer | undefined;
const peers: Peer[] = [];
let good: Peer;
let flaky: Peer;
let hung: Peer;
let otherTeams: Peer;
let collector: Peer;
let dnsUpstream: DnsUpstreamPeer | undefined;
let operatorKey = '';
const keys = { adminA: '', memberA: '', memberAId: '', adminB: '', memberB: '' };
const callAs = (key: () => string): ((method: string, path: string, body?: unknown) => Promise<ApiReply>) => apiCaller(() => server?.url, key);
const operator = callAs(() => operatorKey);
const adminA = callAs(() => keys.adminA);
const memberA = callAs(() => keys.memberA);
const adminB = callAs(() => keys.adminB);
const memberB = callAs(() => keys.memberB);
const conn = (key: string): { apiUrl: string; apiKey: string; requestTimeoutMs: number } => ({ apiUrl: server?.url ?? '', apiKey: key, requestTimeoutMs: 300_000 });
/** The sandbox the lifecycle test made (its create's trace is read by the trace test). */
let lifecycleSandbox = '';
const scrape = async (): Promise<string> => (await fetch(`http://${server?.metricsAddress}/metrics`)).text();

describe('events, webhooks, metrics and traces through a real daemon (gVisor)', { skip, timeout: 300_000 }, () => {
  before(async () => {
    good = await startPeer(() => 200);
    flaky = await startPeer((n) => (n === 0 ? 500 : 200));
    hung = await startPeer(() => null);
    otherTeams = await startPeer(() => 200);
    collector = await startPeer(() => 200);
    peers.push(good, flaky, hung, otherTeams, collector);
    // The policy resolver forwards allowed names to a DNS server on loopback (NXDOMAIN, or SERVFAIL for `broken.*`).
    dnsUpstream = await startDnsUpstream();
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-rmev-e2e-'));
    server = await serve({
      dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX },
      egress: { upstreams: [{ address: dnsUpstream.address, port: dnsUpstream.port }] },
      metricsListen: { host: '127.0.0.1', port: 0 }, otlpEndpoint: collector.url.replace('/hook', ''),
      // The receivers are on loopback: allowed only with --webhook-allow-private (real-webhook-destinations.test.ts: refused without).
      webhookAllowPrivate: true,
      // Retries soon (the 500 receiver's second attempt), and a hung receiver held long enough to act meanwhile.
      coreOptions: { webhooks: { retryBaseMs: 200, timeoutMs: 60_000 } },
    });
    operatorKey = server.newApiKey ?? '';
    await registerRootfsTemplate(server.core, rootfs as string, { templateId: TEMPLATE, snapshotId: 'snap_rmev_base' });
    for (const [team, role, slot] of [['ev-a', 'admin', 'adminA'], ['ev-a', 'member', 'memberA'], ['ev-b', 'admin', 'adminB'], ['ev-b', 'member', 'memberB']] as const) {
      if (role === 'admin') assert.equal((await cli(conn(operatorKey), ['team', 'create', team, '--json'])).code, 0);
      const made = await cli(conn(operatorKey), ['key', 'create', '--team', team, '--role', role, '--json']);
      assert.equal(made.code, 0, made.stderr);
      const info = JSON.parse(made.stdout) as { key: string; id: string };
      keys[slot] = info.key;
      if (slot === 'memberA') keys.memberAId = info.id;
    }
  });
  after(async () => {
    if (server) await stopRealDaemon(server, operator);
    server = undefined;
    for (const peer of peers) await peer.close();
    await dnsUpstream?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  test('a lifecycle: events in order, listed and streamed; webhooks signed, retried, never in the way; other teams see nothing', async () => {
    // Webhooks: made through the CLI by team A's admin (the secret printed once), one by team B's.
    const hooks: Record<string, { id: string; secret: string }> = {};
    for (const [name, peer, key] of [['good', good, keys.adminA], ['flaky', flaky, keys.adminA], ['hung', hung, keys.adminA], ['b', otherTeams, keys.adminB]] as const) {
      const made = await cli(conn(key), ['webhook', 'add', peer.url, '--name', name, '--json']);
      assert.equal(made.code, 0, made.stderr);
      hooks[name] = JSON.parse(made.stdout) as { id: string; secret: string };
    }
    const refused = await cli(conn(keys.memberA), ['webhook', 'add', good.url]);
    assert.deepEqual([refused.code, /FORBIDDEN/.test(refused.stderr)], [1, true], 'a member key cannot add webhooks');
    assert.equal((await adminB('GET', `/v1/webhooks/${hooks.good?.id}`)).status, 404, "another team's webhook is 404");

    const streamedA: SandboxEvent[] = [];
    const streamedB: SandboxEvent[] = [];
    const streamA = await Events.stream({ ...conn(keys.memberA), onEvent: (e) => streamedA.push(e) });
    const streamB = await Events.stream({ ...conn(keys.memberB), onEvent: (e) => streamedB.push(e) });
    const before = parseMetrics(await scrape());

    const created = await memberA('POST', '/v1/sandboxes', { template: TEMPLATE, timeoutMs: 600_000 });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const id = created.json.id as string;
    lifecycleSandbox = id;
    // The hung receiver holds its delivery of `created`; API calls go on meanwhile.
    await until(async () => hung.hung > 0, 'the hung receiver holds a delivery');
    const ran = await memberA('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'echo hi; exit 3' });
    assert.deepEqual([ran.status, ran.json.exitCode], [200, 3]);
    // The other doors a command comes through, each one `exec`: the CLI (started in the background over REST,
    // followed over the process stream) and the SDK's commands.run (the command stream).
    const viaCli = await cli(conn(keys.memberA), ['sandbox', 'exec', id, '--', 'sh', '-c', 'echo cli; exit 4']);
    assert.deepEqual([viaCli.code, viaCli.stdout], [4, 'cli\n'], viaCli.stderr);
    assert.equal((await Sandbox.fromId(id, conn(keys.memberA)).commands.run('echo sdk')).stdout, 'sdk\n');
    const paused = await memberA('POST', `/v1/sandboxes/${id}/pause`);
    assert.equal(paused.json.state, 'paused');
    const inPaused = await memberA('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'true' });
    assert.deepEqual([inPaused.status, inPaused.json.error.code], [409, 'INVALID_STATE'], 'a command in a paused sandbox is refused (an exec that failed)');
    assert.ok(hung.hung > 0, 'the pause completed while the receiver was still hung');
    assert.equal((await memberA('POST', `/v1/sandboxes/${id}/resume`, {})).json.state, 'running');
    const forked = await memberA('POST', `/v1/sandboxes/${id}/fork`, { count: 1 });
    assert.equal(forked.status, 201, JSON.stringify(forked.json));
    const child = forked.json.sandboxes[0].id as string;
    assert.equal((await memberA('POST', `/v1/sandboxes/${id}/snapshots`, { name: 'ev-snap' })).status, 201);
    assert.equal((await memberA('DELETE', `/v1/sandboxes/${child}`)).status, 204);
    assert.equal((await memberA('DELETE', `/v1/sandboxes/${id}`)).status, 204);

    const expected = ['created', 'paused', 'resumed', 'forked', 'snapshotted', 'killed'].map((t) => `sandbox.lifecycle.${t}`);
    const listed = (await memberA('GET', `/v1/events?sandboxId=${id}`)).json.events as SandboxEvent[];
    assert.deepEqual(listed.map((e) => e.type), expected);
    assert.ok(listed.every((e) => e.keyId === keys.memberAId && e.cause === 'api' && e.team === 'ev-a'), 'each names the member key that caused it');
    assert.deepEqual(listed[3]?.data.childIds, [child]);
    await until(async () => streamedA.filter((e) => e.sandboxId === id).length >= expected.length, 'the stream delivered every event');
    assert.deepEqual(streamedA.filter((e) => e.sandboxId === id).map((e) => e.id), listed.map((e) => e.id), 'streamed: the same events, in order');
    const childEvents = streamedA.filter((e) => e.sandboxId === child).map((e) => e.type);
    assert.deepEqual(childEvents, ['sandbox.lifecycle.created', 'sandbox.lifecycle.killed']);

    // Cursors are per team (the CLI unchanged in use): team A's own pages go on from its cursor; the same
    // cursor is no position in team B's stream (400 INVALID_CURSOR), so B learns nothing of A's volume.
    const paged = await cli(conn(keys.memberA), ['events', '--sandbox', id, '--after', listed[2]!.id, '--json']);
    assert.equal(paged.code, 0, paged.stderr);
    assert.deepEqual((JSON.parse(paged.stdout) as { events: SandboxEvent[] }).events.map((e) => e.id), listed.slice(3).map((e) => e.id));
    const crossed = await cli(conn(keys.memberB), ['events', '--after', listed[2]!.id]);
    assert.deepEqual([crossed.code, /INVALID_CURSOR/.test(crossed.stderr)], [1, true], crossed.stderr);

    // Team B: 404 for the sandbox, none of its events listed, streamed or delivered.
    const foreign = await memberB('GET', `/v1/events?sandboxId=${id}`);
    assert.deepEqual([foreign.status, foreign.json.error.code], [404, 'SANDBOX_NOT_FOUND']);
    assert.deepEqual((await memberB('GET', '/v1/events')).json.events, []);
    assert.deepEqual((await memberB('GET', `/v1/sandboxes/${id}/timeline`)).json.error.code, 'SANDBOX_NOT_FOUND');
    await assert.rejects(Events.stream({ ...conn(keys.memberB), sandboxId: id, onEvent: () => undefined }), { code: 'SANDBOX_NOT_FOUND' });
    streamA.stop();
    streamB.stop();
    assert.deepEqual(streamedB, [], "team B's stream got nothing of team A's");

    // The good receiver: every event, each signed with its webhook's secret over the raw body.
    await until(async () => good.received.length >= expected.length + 2, 'the good receiver got every event (the child\'s too)');
    const secret = hooks.good?.secret as string;
    for (const { headers, body } of good.received) {
      const signature = headers['x-ramify-signature'] as string;
      assert.equal(signature, `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`, 'HMAC-SHA256 of the raw body');
      assert.ok(verifyWebhookSignature(body, signature, secret), 'the SDK verifies it too');
      assert.ok(!verifyWebhookSignature(body, signature, hooks.flaky?.secret as string), "another webhook's secret does not");
      const payload = JSON.parse(body.toString('utf8')) as SandboxEvent & { delivery: { sentAt: string; webhookId: string } };
      assert.equal(Math.floor(Date.parse(payload.delivery.sentAt) / 1000), Number(headers['x-ramify-timestamp']));
      assert.equal(payload.delivery.webhookId, hooks.good?.id);
    }
    const goodIds = good.received.map((r) => (JSON.parse(r.body.toString()) as SandboxEvent).id);
    assert.ok(listed.every((e) => goodIds.includes(e.id)), "the webhook payloads carry the listing's ids");
    const goodTypes = good.received.map((r) => (JSON.parse(r.body.toString()) as SandboxEvent).type);
    assert.deepEqual(goodTypes.filter((t) => expected.includes(t)).length, expected.length + 2);

    // The flaky receiver: its first answer was 500, so that delivery was tried again and got 200.
    await until(async () => flaky.received.length >= expected.length + 3, 'the flaky receiver got its retry');
    const firstDelivery = flaky.received[0]?.headers['x-ramify-delivery-id'];
    assert.deepEqual(flaky.received.filter((r) => r.headers['x-ramify-delivery-id'] === firstDelivery).map((r) => (JSON.parse(r.body.toString()) as { delivery: { attempt: number } }).delivery.attempt), [1, 2]);
    const log = await cli(conn(keys.adminA), ['webhook', 'deliveries', hooks.flaky?.id as string, '--json']);
    assert.equal(log.code, 0, log.stderr);
    const retried = (JSON.parse(log.stdout) as { deliveries: Array<{ id: string; status: string; attempts: Array<{ statusCode: number | null }> }> }).deliveries.find((d) => d.id === firstDelivery);
    assert.deepEqual([retried?.status, retried?.attempts.map((a) => a.statusCode)], ['delivered', [500, 200]]);
    assert.ok(hung.hung > 0, 'the hung receiver still holds its first delivery: the daemon went on without it');
    assert.equal(otherTeams.received.length, 0, "team B's webhook got none of team A's events");

    // The timeline: events and the command (exit code 3), newest first; CLI `sandbox events`.
    const timeline = await cli(conn(keys.memberA), ['sandbox', 'events', id, '--oldest-first', '--json']);
    assert.equal(timeline.code, 0, timeline.stderr);
    const entries = (JSON.parse(timeline.stdout) as { entries: Array<{ kind: string; command?: { cmd: string; exitCode: number; keyId: string } }> }).entries;
    const command = entries.find((e) => e.kind === 'command')?.command;
    assert.deepEqual([command?.cmd, command?.exitCode, command?.keyId], ['echo hi; exit 3', 3, keys.memberAId]);
    assert.equal(entries[0]?.kind, 'lifecycle');
    const listedCli = await cli(conn(keys.memberA), ['events', '--sandbox', id, '--json']);
    assert.deepEqual((JSON.parse(listedCli.stdout) as { events: SandboxEvent[] }).events.map((e) => e.type), expected);

    // Metrics move with the operations made.
    const afterScrape = parseMetrics(await scrape());
    for (const [operation, n] of [['create', 1], ['pause', 1], ['resume', 1], ['fork', 1], ['snapshot', 1], ['kill', 2], ['exec', 3]] as const) {
      const moved = sample(afterScrape, 'ramify_operations_total', { operation, outcome: 'ok' }) - sample(before, 'ramify_operations_total', { operation, outcome: 'ok' });
      assert.equal(moved, n, `ramify_operations_total{operation="${operation}"}`);
    }
    const moved = (name: string, labels: Record<string, string>): number => sample(afterScrape, name, labels) - sample(before, name, labels);
    assert.equal(moved('ramify_operations_total', { operation: 'exec', outcome: 'error' }), 1, 'the refused command is an exec that failed');
    assert.equal(moved('ramify_errors_total', { code: 'INVALID_STATE' }), 1, 'with its code');
    assert.ok(sample(afterScrape, 'ramify_events_total', { type: 'sandbox.lifecycle.created' }) >= 2);
    assert.equal(sample(afterScrape, 'ramify_sandboxes', { state: 'running', runtime: 'gvisor' }), 0, 'none left running');
    assert.equal(afterScrape.find((f) => f.name === 'ramify_operation_duration_seconds')?.type, 'HISTOGRAM');
    assert.ok(afterScrape.some((f) => f.name === 'ramify_queue_size' && f.metrics.some((m) => m.labels?.queue === 'webhook_deliveries')));
  });

  test('/metrics: 401 without a key, 403 for a member or another team\'s admin, the text for the operator', async () => {
    const res = await fetch(`${server?.url}/metrics`);
    assert.equal(res.status, 401);
    assert.equal((await memberA('GET', '/metrics')).status, 403);
    assert.equal((await adminA('GET', '/metrics')).status, 403);
    const ok = await fetch(`${server?.url}/metrics`, { headers: { authorization: `Bearer ${operatorKey}` } });
    assert.equal(ok.status, 200);
    assert.ok(parseMetrics(await ok.text()).some((f) => f.name === 'ramify_operations_total'));
  });

  test("the lifecycle's create is one trace: the API span, the create operation, its phases nested; reads make no trace", async () => {
    const id = lifecycleSandbox;
    assert.ok(id, 'the lifecycle test made a sandbox');
    type Span = ReturnType<typeof spansOf>[number];
    const attribute = (s: Span, key: string): unknown => {
      const value = (s.attributes ?? []).find((a) => a.key === key)?.value;
      return value?.stringValue ?? value?.boolValue ?? value?.intValue;
    };
    const isCreate = (s: Span): boolean => s.name === 'create' && attribute(s, 'ramify.sandbox_id') === id;
    await until(async () => spansOf(collector.received).some(isCreate), 'the collector got the create span');
    const spans = spansOf(collector.received);
    const create = spans.find(isCreate) as Span;
    const trace = spans.filter((s) => s.traceId === create.traceId);
    const root = trace.find((s) => !s.parentSpanId);
    assert.equal(root?.name, 'POST /v1/sandboxes');
    assert.equal(create.parentSpanId, root?.spanId);
    assert.equal(trace.filter((s) => s.name === 'create').length, 1, 'one create operation in the trace');
    const childrenOf = (parent: Span | undefined): Span[] => trace.filter((s) => parent !== undefined && s.parentSpanId === parent.spanId);
    const child = (parent: Span | undefined, name: string): Span | undefined => childrenOf(parent).find((s) => s.name === name);
    const names = (parent: Span | undefined): string[] => childrenOf(parent).map((s) => s.name).sort();
    // create → resolve, networks, start; start → store, bringUp, running; bringUp → the restore's phases.
    assert.deepEqual(names(create), ['networks', 'resolve', 'start']);
    const start = child(create, 'start');
    assert.deepEqual(names(start), ['bringUp', 'running', 'store']);
    assert.deepEqual(names(child(start, 'bringUp')), ['agent', 'egress', 'identity', 'image', 'network', 'restore']);
    assert.ok(trace.every((s) => s === root || s === create || attribute(s, 'ramify.phase') === true), 'below the operation, phases only');

    // Reads: a client polling a sandbox makes no trace. A write after it (a create refused) does, and is
    // exported after the read would have been (spans are exported in the order they end).
    for (let i = 0; i < 3; i++) assert.equal((await memberA('GET', `/v1/sandboxes/${id}`)).status, 200);
    const refused = await memberA('POST', '/v1/sandboxes', { template: 'tpl_rmev_none' });
    assert.equal(refused.json.error.code, 'TEMPLATE_NOT_FOUND');
    const isRefused = (s: Span): boolean => s.name === 'POST /v1/sandboxes' && attribute(s, 'ramify.error_code') === 'TEMPLATE_NOT_FOUND';
    await until(async () => spansOf(collector.received).some(isRefused), 'the collector got the refused create');
    const reads = spansOf(collector.received).filter((s) => s.name.startsWith('GET '));
    assert.deepEqual(reads.map((s) => s.name), [], 'no GET made a trace (the lifecycle test made many)');
  });
  test('DNS lookups the policy denies, or that fail, are in the timeline and the egress log: each name once per window', async () => {
    const created = await memberA('POST', '/v1/sandboxes', { template: TEMPLATE, egress: { mode: 'allowlist', rules: ['*.allowed.test'] } });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const id = created.json.id as string;
    // 10 rounds of three lookups: refused by the policy; allowed, no such name upstream; allowed, upstream failing.
    const lookups = 'for i in $(seq 1 10); do getent hosts blocked.example.com; getent hosts missing.allowed.test; getent hosts broken.allowed.test; done; echo done';
    const ran = await memberA('POST', `/v1/sandboxes/${id}/commands`, { cmd: lookups });
    assert.deepEqual([ran.json.exitCode, ran.json.stdout], [0, 'done\n'], 'none of them resolved');
    assert.ok(dnsUpstream?.asked.includes('missing.allowed.test') && dnsUpstream.asked.includes('broken.allowed.test'), 'allowed names went upstream');
    assert.ok(!dnsUpstream?.asked.includes('blocked.example.com'), 'the refused one did not');

    const timeline = await cli(conn(keys.memberA), ['sandbox', 'events', id, '--json']);
    assert.equal(timeline.code, 0, timeline.stderr);
    type Egress = { protocol: string; name: string | null; verdict: string; rule: string | null; error?: string | null; destination: string };
    const dns = (JSON.parse(timeline.stdout) as { entries: Array<{ kind: string; egress?: Egress }> }).entries
      .filter((e) => e.kind === 'egress' && e.egress?.protocol === 'dns').map((e) => e.egress as Egress);
    const shown = dns.map((e) => [e.name, e.verdict, e.rule, e.error ?? null, e.destination]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    assert.deepEqual(shown, [
      ['blocked.example.com', 'denied', null, null, ''],
      ['broken.allowed.test', 'allowed', '*.allowed.test', 'SERVFAIL', ''],
      ['missing.allowed.test', 'allowed', '*.allowed.test', 'NXDOMAIN', ''],
    ], 'each of the 30 lookups (and their retries) logged once per name');
    const log = await memberA('GET', `/v1/sandboxes/${id}/egress/log`);
    assert.equal(log.json.entries.filter((e: Egress) => e.protocol === 'dns').length, 3, 'the egress log holds the same entries');
    const human = await cli(conn(keys.memberA), ['sandbox', 'events', id]);
    assert.match(human.stdout, /allowed dns missing\.allowed\.test → NXDOMAIN \(rule \*\.allowed\.test\)/);
    assert.match(human.stdout, /denied dns blocked\.example\.com/);
    assert.equal((await memberB('GET', `/v1/sandboxes/${id}/egress/log`)).status, 404, "another team's key sees none of it");
    assert.equal((await memberA('DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });
});
