/**
 * HTTP-edge tests of events, the timeline, webhooks and /metrics, in-process with `app.inject` over a core
 * wired to core's FAKE runtime and agent (what events a lifecycle makes and in what order, who caused them,
 * cursors, team scoping of listings, streams and webhooks, bad input changing nothing, roles; NOT runtime
 * coverage and no deliveries: real-events.test.ts drives a real daemon and real receivers).
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { WebSocket } from 'ws';
import { buildApp } from './app.js';
import { createMetrics } from './observability/metrics.js';
import { LivenessMonitor } from '@ramify/core';
import { EVENT_TYPES } from '@ramify/contracts';
import { bearer, callApp, createViaApi, httpTestBed, teamWithKey as makeTeamWithKey, type AuthHeaders, type HttpTestBed } from './test-support.js';

let bed: HttpTestBed;
beforeEach(async () => {
  bed = await httpTestBed();
});
afterEach(async () => {
  await bed.dispose();
});

type Headers = AuthHeaders;
const call = (headers: Headers | Record<string, never>, method: string, url: string, payload?: unknown): ReturnType<typeof callApp> => callApp(bed, headers, method, url, payload);
const teamWithKey = (id: string, role: 'admin' | 'member' = 'member'): Promise<Headers> => makeTeamWithKey(bed, id, role);

/** The frames of an event stream until `until` holds for them (or its first error frame). */
function streamFrames(url: string, headers: Headers, until: (frames: Array<{ type: string; [k: string]: unknown }>) => boolean, act?: () => Promise<void>): Promise<Array<{ type: string; [k: string]: unknown }>> {
  return new Promise((resolve, reject) => {
    void bed.app.injectWS(url, { headers }, {
      onInit: (ws: WebSocket) => {
        const frames: Array<{ type: string; [k: string]: unknown }> = [];
        ws.on('message', (data) => {
          frames.push(JSON.parse(data.toString()) as { type: string });
          if (frames.at(-1)?.type === 'ready' && act) void act().catch(reject);
          if (until(frames) || frames.at(-1)?.type === 'error') {
            ws.terminate();
            resolve(frames);
          }
        });
      },
    }).catch(reject);
  });
}

const keyIdOf = async (headers: Headers): Promise<string> => {
  const key = headers.authorization.slice('Bearer '.length);
  return (await bed.world.store.listApiKeys()).find((k) => k.prefix === key.slice(0, 8))?.id ?? '';
};

describe('events', () => {
  test('a lifecycle makes its events in order, each with its key and cause; filters, cursors and order work', async () => {
    const created = await call(bed.auth, 'POST', '/v1/sandboxes', {});
    const id = created.body.id as string;
    for (const [method, suffix, body] of [['POST', '/pause', undefined], ['POST', '/resume', {}], ['POST', '/fork', { count: 2 }], ['POST', '/snapshots', { name: 'snap-1' }], ['DELETE', '', undefined]] as const) {
      const res = await call(bed.auth, method, `/v1/sandboxes/${id}${suffix}`, body);
      assert.ok(res.status < 300, `${method} ${suffix}: ${JSON.stringify(res.body)}`);
    }
    const page = await call(bed.auth, 'GET', `/v1/events?sandboxId=${id}`);
    assert.equal(page.status, 200);
    assert.deepEqual(page.body.events.map((e: { type: string }) => e.type), [
      'sandbox.lifecycle.created', 'sandbox.lifecycle.paused', 'sandbox.lifecycle.resumed', 'sandbox.lifecycle.forked', 'sandbox.lifecycle.snapshotted', 'sandbox.lifecycle.killed',
    ], 'no paused/resumed of the fork or snapshot of a running sandbox');
    const keyId = await keyIdOf(bed.auth);
    assert.ok(page.body.events.every((e: { keyId: string; cause: string; team: string; sandboxId: string }) => e.keyId === keyId && e.cause === 'api' && e.team === 'default' && e.sandboxId === id));
    const forked = page.body.events[3];
    assert.equal(forked.data.childIds.length, 2);
    assert.equal(page.body.events[4].data.name, 'snap-1');
    const ids = page.body.events.map((e: { id: string }) => Number(e.id.split('_')[2]));
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b), 'ids grow in order');

    const all = await call(bed.auth, 'GET', '/v1/events?type=sandbox.lifecycle.created');
    assert.deepEqual(all.body.events.map((e: { sandboxId: string }) => e.sandboxId).sort(), [id, ...forked.data.childIds].sort(), 'the fork children were created too');
    assert.ok(all.body.events.filter((e: { sandboxId: string }) => e.sandboxId !== id).every((e: { data: { parentId: string } }) => e.data.parentId === id));

    const first = await call(bed.auth, 'GET', `/v1/events?sandboxId=${id}&limit=2`);
    assert.deepEqual([first.body.events.length, first.body.hasMore], [2, true]);
    const second = await call(bed.auth, 'GET', `/v1/events?sandboxId=${id}&limit=10&after=${first.body.nextCursor}`);
    assert.deepEqual(second.body.events.map((e: { id: string }) => e.id), page.body.events.slice(2).map((e: { id: string }) => e.id));
    const polled = await call(bed.auth, 'GET', `/v1/events?sandboxId=${id}&after=${second.body.nextCursor}`);
    assert.deepEqual([polled.body.events, polled.body.nextCursor, polled.body.hasMore], [[], second.body.nextCursor, false], 'polling from the last cursor: nothing new, same cursor');
    const newest = await call(bed.auth, 'GET', `/v1/events?sandboxId=${id}&order=desc&limit=4`);
    assert.deepEqual(newest.body.events.map((e: { type: string }) => e.type), ['sandbox.lifecycle.killed', 'sandbox.lifecycle.snapshotted', 'sandbox.lifecycle.forked', 'sandbox.lifecycle.resumed']);
    const older = await call(bed.auth, 'GET', `/v1/events?sandboxId=${id}&order=desc&limit=4&after=${newest.body.nextCursor}`);
    assert.deepEqual([older.body.events.map((e: { type: string }) => e.type), older.body.nextCursor], [['sandbox.lifecycle.paused', 'sandbox.lifecycle.created'], null]);
  });

  test('bad input is a clear 400: an unknown type, a malformed cursor, an unknown field', async () => {
    for (const url of ['/v1/events?type=sandbox.lifecycle.nope', '/v1/events?type=', '/v1/events?limit=0', '/v1/events?colour=red', '/v1/events?after=']) {
      const res = await call(bed.auth, 'GET', url);
      assert.deepEqual([res.status, res.body.error.code], [400, 'VALIDATION_FAILED'], url);
    }
    for (const cursor of ['12', 'evt_x', 'evt_0', 'evt_5', 'evt_0000000g_1', 'nope']) {
      const res = await call(bed.auth, 'GET', `/v1/events?after=${cursor}`);
      assert.deepEqual([res.status, res.body.error.code], [400, 'INVALID_CURSOR'], cursor);
      assert.match(res.body.error.message, /^query\.after: must be an event's id or the nextCursor of a previous page .*, got '/);
      assert.deepEqual(res.body.error.details.issues, [{ path: 'query.after', message: res.body.error.message.slice('query.after: '.length) }], 'the layout of every bad query field');
    }
    // Worded as every enum error (`must be one of ...`) and the sandbox state list: the allowed types, then what was sent.
    const allowed = `must be event types from ${EVENT_TYPES.join(', ')}, comma-separated`;
    for (const [query, got] of [['sandbox.lifecycle.paused,sandbox.lifecycle.nope', "'sandbox.lifecycle.nope'"], ['', "''"], [`x${'y'.repeat(60)}`, `'x${'y'.repeat(39)}...'`]] as const) {
      const res = await call(bed.auth, 'GET', `/v1/events?type=${query}`);
      assert.equal(res.body.error.message, `query.type: ${allowed}, got ${got}`, query);
      assert.deepEqual(res.body.error.details.issues, [{ path: 'query.type', message: `${allowed}, got ${got}` }], query);
    }
    assert.equal((await call({}, 'GET', '/v1/events')).status, 401);
  });

  test("cursors are per team: another team's activity leaves no gap, and its cursors are refused", async () => {
    const other = await teamWithKey('beta');
    const own = (await call(other, 'POST', '/v1/sandboxes', {})).body.id as string;
    const before = (await call(other, 'GET', '/v1/events')).body as { events: Array<{ id: string }>; nextCursor: string };
    // The default team is busy meanwhile: none of it may show in beta's ids.
    const busy = (await call(bed.auth, 'POST', '/v1/sandboxes', {})).body.id as string;
    for (const action of ['pause', 'resume', 'pause']) await call(bed.auth, 'POST', `/v1/sandboxes/${busy}/${action}`, action === 'resume' ? {} : undefined);
    await call(other, 'POST', `/v1/sandboxes/${own}/pause`);
    const after = (await call(other, 'GET', `/v1/events?after=${before.nextCursor}`)).body as { events: Array<{ id: string }>; nextCursor: string };
    const number = (id: string): number => Number(id.split('_')[2]);
    assert.deepEqual([before.events.map((e) => number(e.id)), after.events.map((e) => number(e.id))], [[1], [2]], "beta's ids count beta's events only");
    const defaults = (await call(bed.auth, 'GET', '/v1/events')).body as { events: Array<{ id: string }>; nextCursor: string };
    assert.deepEqual(defaults.events.map((e) => number(e.id)), [1, 2, 3, 4]);
    // Another team's cursor, a cursor past the newest event, and the old global form: 400, the same message.
    const past = after.nextCursor.replace(/_\d+$/, '_3');
    for (const [key, cursor] of [[other, defaults.nextCursor], [bed.auth, after.nextCursor], [other, past], [other, 'evt_2']] as const) {
      const refused = await call(key, 'GET', `/v1/events?after=${cursor}`);
      assert.deepEqual([refused.status, refused.body.error.code, refused.body.error.details?.cursor], [400, 'INVALID_CURSOR', cursor], cursor);
    }
    assert.equal((await call(other, 'GET', `/v1/events?after=${defaults.nextCursor}`)).body.error.message, (await call(other, 'GET', `/v1/events?after=${past}`)).body.error.message.replace(past, defaults.nextCursor), 'another team\'s cursor reads as one never given out');
    const frames = await streamFrames(`/v1/events/stream?after=${defaults.nextCursor}`, other, () => false);
    assert.deepEqual([frames[0]?.type, frames[0]?.code], ['error', 'INVALID_CURSOR']);
    const replay = await streamFrames(`/v1/events/stream?after=${before.nextCursor}`, other, (f) => f.some((x) => x.type === 'ready'));
    assert.deepEqual(replay.map((f) => (f.type === 'event' ? (f.event as { id: string }).id : f.type)), [after.events[0]?.id, 'ready']);
  });

  test("another team's key: 404 for its sandbox, nothing of it in the listing or the stream", async () => {
    const other = await teamWithKey('beta');
    const id = (await call(bed.auth, 'POST', '/v1/sandboxes', {})).body.id as string;
    const own = (await call(other, 'POST', '/v1/sandboxes', {})).body.id as string;
    const refused = await call(other, 'GET', `/v1/events?sandboxId=${id}`);
    assert.deepEqual([refused.status, refused.body.error.code], [404, 'SANDBOX_NOT_FOUND']);
    assert.equal((await call(other, 'GET', `/v1/events?sandboxId=sbx_unknown`)).body.error.message, (await call(other, 'GET', `/v1/events?sandboxId=${id}`)).body.error.message.replace(id, 'sbx_unknown'));
    assert.deepEqual((await call(other, 'GET', '/v1/events')).body.events.map((e: { sandboxId: string }) => e.sandboxId), [own]);
    assert.deepEqual((await call(other, 'GET', `/v1/sandboxes/${id}/timeline`)).body.error.code, 'SANDBOX_NOT_FOUND');
    const frames = await streamFrames(`/v1/events/stream?sandboxId=${id}`, other, () => false);
    assert.deepEqual([frames[0]?.type, frames[0]?.code], ['error', 'SANDBOX_NOT_FOUND']);
    // Its live stream sees its own team's events only, while the other team acts.
    const live = await streamFrames('/v1/events/stream', other, (f) => f.some((x) => x.type === 'event'), async () => {
      await call(bed.auth, 'POST', `/v1/sandboxes/${id}/pause`);
      await call(other, 'POST', `/v1/sandboxes/${own}/pause`);
    });
    const events = live.filter((f) => f.type === 'event').map((f) => f.event as { sandboxId: string; type: string });
    assert.deepEqual(events.map((e) => [e.sandboxId, e.type]), [[own, 'sandbox.lifecycle.paused']]);
  });

  test('the stream replays what followed `after`, says ready, then sends new events; bad query is an error frame', async () => {
    const id = (await call(bed.auth, 'POST', '/v1/sandboxes', {})).body.id as string;
    const cursor = (await call(bed.auth, 'GET', `/v1/events?sandboxId=${id}`)).body.nextCursor as string;
    await call(bed.auth, 'POST', `/v1/sandboxes/${id}/pause`);
    const frames = await streamFrames(`/v1/events/stream?sandboxId=${id}&after=${cursor}`, bed.auth, (f) => f.filter((x) => x.type === 'event').length >= 2, async () => {
      await call(bed.auth, 'POST', `/v1/sandboxes/${id}/resume`, {});
    });
    assert.deepEqual(frames.map((f) => (f.type === 'event' ? (f.event as { type: string }).type : f.type)), ['sandbox.lifecycle.paused', 'ready', 'sandbox.lifecycle.resumed']);
    const bad = await streamFrames('/v1/events/stream?type=nope', bed.auth, () => false);
    assert.deepEqual([bad[0]?.type, bad[0]?.code], ['error', 'VALIDATION_FAILED']);
  });

  test('the timeline joins lifecycle events and commands (exit code, duration), newest first or oldest first', async () => {
    const id = (await call(bed.auth, 'POST', '/v1/sandboxes', {})).body.id as string;
    bed.world.clock.advance(1000);
    const ran = await call(bed.auth, 'POST', `/v1/sandboxes/${id}/commands`, { cmd: 'echo hi' });
    assert.equal(ran.status, 200, JSON.stringify(ran.body));
    bed.world.clock.advance(1000);
    await call(bed.auth, 'POST', `/v1/sandboxes/${id}/pause`);
    const newest = await call(bed.auth, 'GET', `/v1/sandboxes/${id}/timeline`);
    assert.deepEqual(newest.body.entries.map((e: { kind: string }) => e.kind), ['lifecycle', 'command', 'lifecycle']);
    const command = newest.body.entries[1].command;
    assert.deepEqual([command.cmd, command.exitCode, command.keyId], ['echo hi', ran.body.exitCode, await keyIdOf(bed.auth)]);
    assert.equal(typeof command.durationMs, 'number');
    const oldest = await call(bed.auth, 'GET', `/v1/sandboxes/${id}/timeline?order=asc&limit=2`);
    assert.deepEqual(oldest.body.entries.map((e: { kind: string }) => e.kind), ['command', 'lifecycle'], 'the newest two, oldest first');
    assert.equal((await call(bed.auth, 'GET', `/v1/sandboxes/${id}/timeline?order=up`)).status, 400);
  });
});

describe('webhooks', () => {
  test('admin only, team-scoped, the secret once; bad input changes nothing', async () => {
    const member = await teamWithKey('acme');
    const admin = await teamWithKey('beta', 'admin');
    assert.deepEqual((await call(member, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/x' })).body.error.code, 'FORBIDDEN');
    assert.deepEqual((await call(member, 'GET', '/v1/webhooks')).status, 403);
    assert.equal((await call({}, 'POST', '/v1/webhooks', { url: 'http://127.0.0.1:9/x' })).status, 401);
    for (const body of [{ url: 'ftp://example.com/x' }, { url: 'file:///etc/passwd' }, { url: 'not a url' }, { url: 'http://127.0.0.1:9/', events: ['sandbox.lifecycle.nope'] }, { url: 'http://127.0.0.1:9/', extra: 1 }]) {
      const res = await call(admin, 'POST', '/v1/webhooks', body);
      assert.deepEqual([res.status, res.body.error.code], [400, 'VALIDATION_FAILED'], JSON.stringify(body));
    }
    assert.match((await call(admin, 'POST', '/v1/webhooks', { url: 'ftp://example.com/x' })).body.error.message, /http:\/\/ or https:\/\//);
    assert.deepEqual((await call(admin, 'GET', '/v1/webhooks')).body.webhooks, [], 'nothing was stored');
    const made = await call(admin, 'POST', '/v1/webhooks', { url: 'https://hooks.example.com/ramify', events: ['sandbox.lifecycle.created'] });
    assert.equal(made.status, 201);
    assert.match(made.body.secret, /^whsec_[A-Za-z0-9_-]{43}$/);
    assert.deepEqual([made.body.team, made.body.name, made.body.events], ['beta', 'hooks.example.com', ['sandbox.lifecycle.created']]);
    const listed = await call(admin, 'GET', '/v1/webhooks');
    assert.deepEqual(listed.body.webhooks.map((w: { id: string }) => w.id), [made.body.id]);
    assert.ok(!JSON.stringify(listed.body).includes(made.body.secret) && !JSON.stringify((await call(admin, 'GET', `/v1/webhooks/${made.body.id}`)).body).includes(made.body.secret), 'the secret is shown once');
    // Another team's admin (the operator, of the default team) sees nothing of it: 404, as an unknown id.
    for (const [method, suffix] of [['GET', ''], ['DELETE', ''], ['GET', '/deliveries']] as const) {
      const res = await call(bed.auth, method, `/v1/webhooks/${made.body.id}${suffix}`);
      assert.deepEqual([res.status, res.body.error.code], [404, 'WEBHOOK_NOT_FOUND'], `${method} ${suffix}`);
    }
    assert.deepEqual((await call(bed.auth, 'GET', '/v1/webhooks')).body.webhooks, []);
    assert.deepEqual((await call(admin, 'GET', `/v1/webhooks/${made.body.id}/deliveries`)).body.deliveries, []);
    assert.equal((await call(admin, 'DELETE', `/v1/webhooks/${made.body.id}`)).status, 204);
    assert.equal((await call(admin, 'GET', `/v1/webhooks/${made.body.id}`)).body.error.code, 'WEBHOOK_NOT_FOUND');
  });

  test('closed by default: credentials and literal non-public IPs are 400 saying why; stored credentials never shown', async () => {
    const admin = await teamWithKey('gamma', 'admin');
    const creds = await call(admin, 'POST', '/v1/webhooks', { url: 'https://user:pw@hooks.example.com/r' });
    assert.deepEqual([creds.status, creds.body.error.code], [400, 'VALIDATION_FAILED']);
    assert.match(creds.body.error.message, /carries no credentials.*signed with the webhook's secret.*put it in the path or the query/);
    for (const [url, what] of [['http://127.0.0.1:9/x', 'loopback'], ['http://[::1]/x', 'loopback'], ['http://192.168.1.10/x', 'private']]) {
      const res = await call(admin, 'POST', '/v1/webhooks', { url });
      assert.deepEqual([res.status, res.body.error.code], [400, 'VALIDATION_FAILED'], url);
      assert.match(res.body.error.message, new RegExp(`is a ${what} address: webhooks reach public addresses only; start the daemon with --webhook-allow-private to allow it`), url);
    }
    const metadata = await call(admin, 'POST', '/v1/webhooks', { url: 'http://169.254.169.254/latest/meta-data/' });
    assert.deepEqual([metadata.status, metadata.body.error.code], [400, 'VALIDATION_FAILED']);
    assert.match(metadata.body.error.message, /is a link-local address, .*webhooks never reach it, not even with --webhook-allow-private/);
    assert.deepEqual((await call(admin, 'GET', '/v1/webhooks')).body.webhooks, [], 'nothing was stored');
    // A name is checked at each delivery, on what it resolves to then (webhook-sender.test.ts).
    assert.equal((await call(admin, 'POST', '/v1/webhooks', { url: 'http://localhost:9/x' })).status, 201);
    // A row stored with credentials before they were refused: listed and read without them.
    await bed.world.store.insertWebhook({ id: 'whk_old', teamId: 'gamma', name: 'old', url: 'https://user:s3cret@hooks.example.com/r', events: ['sandbox.lifecycle.created'], secret: 'whsec_x', createdAt: 0, createdBy: null });
    const listed = JSON.stringify((await call(admin, 'GET', '/v1/webhooks')).body) + JSON.stringify((await call(admin, 'GET', '/v1/webhooks/whk_old')).body);
    assert.ok(listed.includes('"https://hooks.example.com/r"') && !listed.includes('s3cret') && !listed.includes('user@'), listed);
  });
});

describe('/metrics', () => {
  test('401 without a key, 403 for a member or another team\'s admin, the text format for the operator', async () => {
    const metrics = createMetrics({ store: bed.world.store });
    const app = await buildApp({ core: bed.world.core, metrics });
    try {
      const member = await teamWithKey('acme');
      const admin = await teamWithKey('beta', 'admin');
      assert.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 401);
      assert.equal((await app.inject({ method: 'GET', url: '/metrics', headers: member })).statusCode, 403);
      assert.equal((await app.inject({ method: 'GET', url: '/metrics', headers: admin })).statusCode, 403);
      await app.inject({ method: 'GET', url: '/v1/sandboxes/sbx_nope', headers: bed.auth });
      const res = await app.inject({ method: 'GET', url: '/metrics', headers: bed.auth });
      assert.equal(res.statusCode, 200);
      assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
      assert.match(res.body, /^ramify_errors_total\{code="SANDBOX_NOT_FOUND"\} 1$/m);
      assert.match(res.body, /^# TYPE ramify_operation_duration_seconds histogram$/m);
    } finally {
      await app.close();
    }
  });

  test('a lost instance announced on the bus is counted by runtime, reason and what noticed it', async () => {
    const metrics = createMetrics({ store: bed.world.store });
    const stop = metrics.countLostInstances(bed.world.core.events);
    try {
      const { id } = await createViaApi(bed);
      bed.world.runtime.die(id, 'oom');
      await new LivenessMonitor(bed.world.core).sweep();
      const { text } = await metrics.render();
      assert.match(text, /^ramify_instances_lost_total\{runtime="gvisor",reason="oom",noticed_by="liveness"\} 1$/m);
    } finally {
      stop();
    }
  });
});
