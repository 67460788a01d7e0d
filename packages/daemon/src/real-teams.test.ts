/**
 * Teams and scoped API keys (issue 15, items 1-2) end to end: a REAL daemon (`serve()` in-process,
 * prefix `rmtm`, gVisor, SSH gateway on) with two teams made through the built CLI, each with a member
 * key. Neither team can list, get, exec in, read files of, stream (command stream, watch stream), pause,
 * fork, snapshot, set egress on or read the egress log of the other's sandbox: 404 over REST, WebSocket
 * and the SDK, while the owner's calls work on the same sandbox. A member key cannot make keys (403); a
 * revoked or expired key is 401 at once; a registered SSH key does not open another team's sandbox; the
 * maxRunning+1st create is 429 QUOTA_EXCEEDED and makes nothing; bad input changes nothing. Skipped,
 * with the reason, when not root or without the tools.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApiKey } from '@ramify/core';
import { Sandbox, SandboxNotFoundError, listSnapshots } from '@ramify/sdk';
import { WebSocket } from 'ws';
import { serve, type RamifyServer } from './serve.js';
import { apiCaller, realRuntimeSkip, registerRootfsTemplate, stopRealDaemon, type ApiReply } from './real-test-support.js';
import { cli, run, sshOptions } from './real-ssh-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc', 'ssh', 'ssh-keygen']);
const PREFIX = 'rmtm';
const TEMPLATE = 'tpl_rmtm';

let dataDir: string;
let work: string;
let server: RamifyServer | undefined;
let operatorKey = '';
const keys = { a: '', b: '' };
let sandboxA = '';
const callAs = (key: () => string): ((method: string, path: string, body?: unknown) => Promise<ApiReply>) => apiCaller(() => server?.url, key);
const operator = callAs(() => operatorKey);
const asA = callAs(() => keys.a);
const asB = callAs(() => keys.b);
const conn = (key: string): { apiUrl: string; apiKey: string; requestTimeoutMs: number } => ({ apiUrl: server?.url ?? '', apiKey: key, requestTimeoutMs: 300_000 });

/** The first frame and close code of a WebSocket `path` opened with `key` (`send` as its first frame). */
function wsFirstFrame(path: string, key: string, send?: unknown): Promise<{ frame: { type: string; code?: string }; code: number }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${(server?.url ?? '').replace(/^http/, 'ws')}${path}`, { headers: { authorization: `Bearer ${key}` } });
    let frame: { type: string; code?: string } = { type: 'none' };
    ws.on('open', () => send !== undefined && ws.send(JSON.stringify(send)));
    ws.on('message', (data) => {
      if (frame.type === 'none') frame = JSON.parse(data.toString()) as { type: string; code?: string };
    });
    ws.on('close', (code) => resolve({ frame, code }));
    ws.on('error', reject);
  });
}

describe('teams and scoped keys through a real daemon (gVisor)', { skip, timeout: 300_000 }, () => {
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-rmtm-e2e-'));
    work = await mkdtemp(join(tmpdir(), 'ramify-rmtm-work-'));
    server = await serve({ dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX }, ssh: { host: '127.0.0.1', port: 0 } });
    operatorKey = server.newApiKey ?? '';
    // The default team's template: shared, so both teams create from it.
    await registerRootfsTemplate(server.core, rootfs as string, { templateId: TEMPLATE, snapshotId: 'snap_rmtm_base' });
    for (const team of ['team-a', 'team-b'] as const) {
      const made = await cli(conn(operatorKey), ['team', 'create', team, '--json']);
      assert.equal(made.code, 0, made.stderr);
      const key = await cli(conn(operatorKey), ['key', 'create', '--team', team, '--expires', '30d', '--json']);
      assert.equal(key.code, 0, key.stderr);
      const info = JSON.parse(key.stdout) as Record<string, string>;
      assert.deepEqual(Object.keys(info).sort(), ['expiresAt', 'id', 'key', 'role', 'team']);
      assert.deepEqual([info.team, info.role], [team, 'member']);
      keys[team === 'team-a' ? 'a' : 'b'] = info.key as string;
    }
    const created = await asA('POST', '/v1/sandboxes', { template: TEMPLATE, timeoutMs: 600_000 });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    assert.equal(created.json.team, 'team-a');
    sandboxA = created.json.id;
  });
  after(async () => {
    if (server) await stopRealDaemon(server, operator);
    server = undefined;
    await rm(dataDir, { recursive: true, force: true });
    await rm(work, { recursive: true, force: true });
  });

  test("REST: every call on the other team's sandbox is 404, the owner's work; lists are per team", async () => {
    const calls: Array<[string, string, unknown?]> = [
      ['GET', ''], ['POST', '/commands', { cmd: 'echo hi' }], ['GET', '/files?path=/etc/hostname'], ['GET', '/files/list?path=/root'],
      ['POST', '/pause'], ['POST', '/fork', { count: 1 }], ['POST', '/snapshots', { name: 'stolen' }], ['PUT', '/egress', { mode: 'deny-all' }],
      ['GET', '/egress'], ['GET', '/egress/log'], ['GET', '/ingress/log'], ['POST', '/ssh-access', {}], ['DELETE', ''],
    ];
    for (const [method, suffix, body] of calls) {
      const r = await asB(method, `/v1/sandboxes/${sandboxA}${suffix}`, body);
      assert.deepEqual([r.status, r.json?.error?.code], [404, 'SANDBOX_NOT_FOUND'], `${method} ${suffix}`);
    }
    assert.deepEqual((await asB('GET', '/v1/sandboxes')).json.sandboxes, []);
    assert.deepEqual((await asA('GET', '/v1/sandboxes')).json.sandboxes.map((s: { id: string }) => s.id), [sandboxA]);
    const ran = await asA('POST', `/v1/sandboxes/${sandboxA}/commands`, { cmd: 'echo owner' });
    assert.deepEqual([ran.status, ran.json.stdout], [200, 'owner\n'], 'the owner runs commands in the same sandbox');
    assert.equal((await asA('GET', `/v1/sandboxes/${sandboxA}/egress`)).json.mode, 'open', "team-b's egress change never applied");
    assert.equal((await asA('GET', `/v1/sandboxes/${sandboxA}`)).json.state, 'running', "team-b's pause and kill never applied");
  });

  test('WebSocket: the command stream and the watch stream refuse the other team with SANDBOX_NOT_FOUND', async () => {
    const command = await wsFirstFrame(`/v1/sandboxes/${sandboxA}/commands/stream`, keys.b, { type: 'start', request: { cmd: 'echo in' } });
    assert.deepEqual([command.frame.type, command.frame.code, command.code], ['error', 'SANDBOX_NOT_FOUND', 1008]);
    const watch = await wsFirstFrame(`/v1/sandboxes/${sandboxA}/files/watch?path=/root`, keys.b);
    assert.deepEqual([watch.frame.type, watch.frame.code, watch.code], ['error', 'SANDBOX_NOT_FOUND', 1008]);
    const own = await wsFirstFrame(`/v1/sandboxes/${sandboxA}/commands/stream`, keys.a, { type: 'start', request: { cmd: 'echo in' } });
    assert.equal(own.frame.type, 'started', 'the owner streams');
  });

  test("SDK: the other team's sandbox is SandboxNotFoundError everywhere; the owner's SDK works", async () => {
    const foreign = Sandbox.fromId(sandboxA, conn(keys.b));
    const attempts: Array<[string, () => Promise<unknown>]> = [
      ['getInfo', () => Sandbox.getInfo(sandboxA, conn(keys.b))],
      ['connect', () => Sandbox.connect(sandboxA, conn(keys.b))],
      ['commands.run (stream)', () => foreign.commands.run('echo in')],
      ['files.read', () => foreign.files.read('/etc/hostname')],
      ['files.watchDir (stream)', () => foreign.files.watchDir('/root', () => undefined)],
      ['pause', () => foreign.pause()],
      ['fork', () => foreign.fork({ count: 1 })],
      ['snapshot', () => foreign.snapshot({ name: 'stolen' })],
      ['setEgress', () => foreign.setEgress({ mode: 'deny-all' })],
      ['getEgressLog', () => foreign.getEgressLog()],
    ];
    for (const [what, attempt] of attempts) {
      await assert.rejects(attempt(), (err: unknown) => err instanceof SandboxNotFoundError && err.code === 'SANDBOX_NOT_FOUND', what);
    }
    assert.equal(await Sandbox.kill(sandboxA, conn(keys.b)), false, 'kill of an unseen sandbox: nothing to kill');
    const listed: string[] = [];
    for await (const s of Sandbox.list(conn(keys.b))) listed.push(s.id);
    assert.deepEqual(listed, []);
    assert.ok(!(await listSnapshots(conn(keys.b))).some((s) => s.sandboxId === sandboxA));
    const mine = await Sandbox.connect(sandboxA, conn(keys.a));
    const r = await mine.commands.run('cat /etc/hostname');
    assert.equal(r.exitCode, 0);
  });

  test('keys: a member key cannot make keys (403); a revoked or an expired key is 401 at once', async () => {
    const refused = await cli(conn(keys.a), ['key', 'create', '--team', 'team-a']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /FORBIDDEN/);
    assert.equal((await asA('POST', '/v1/keys', { role: 'admin' })).status, 403);
    // A team admin makes its own team's keys; naming another team (the default one too) is a clear 403.
    const adminA = await createApiKey((server as RamifyServer).core.store, (server as RamifyServer).core.clock, 'admin-a', { teamId: 'team-a', role: 'admin' });
    const crossed = await cli(conn(adminA.key), ['key', 'create', '--team', 'default']);
    assert.equal(crossed.code, 1);
    assert.match(crossed.stderr, /FORBIDDEN.*this admin key of team 'team-a' manages the keys of team 'team-a' only .*managed by the operator/);
    const own = await callAs(() => adminA.key)('POST', '/v1/keys', {});
    assert.deepEqual([own.status, own.json.team], [201, 'team-a']);

    const spare = JSON.parse((await cli(conn(operatorKey), ['key', 'create', '--team', 'team-a', '--json'])).stdout) as { id: string; key: string };
    assert.equal((await callAs(() => spare.key)('GET', '/v1/sandboxes')).status, 200);
    const revoked = await cli(conn(operatorKey), ['key', 'revoke', spare.id]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal((await callAs(() => spare.key)('GET', '/v1/sandboxes')).status, 401, 'revoked: refused from the next request');
    await assert.rejects(Sandbox.getInfo(sandboxA, conn(spare.key)), { code: 'UNAUTHORIZED' });

    const server0 = server as RamifyServer;
    const expired = await createApiKey(server0.core.store, server0.core.clock, 'expired', { teamId: 'team-a', role: 'member', expiresAt: Date.now() - 1 });
    assert.equal((await callAs(() => expired.key)('GET', '/v1/sandboxes')).status, 401, 'expired: refused');
    const list = JSON.parse((await cli(conn(operatorKey), ['key', 'list', '--team', 'team-a', '--json'])).stdout) as { keys: Array<{ id: string; revokedAt: string | null; prefix: string; status: string }> };
    assert.notEqual(list.keys.find((k) => k.id === spare.id)?.revokedAt, null);
    const statusOf = (id: string): string | undefined => list.keys.find((k) => k.id === id)?.status;
    assert.deepEqual([statusOf(spare.id), statusOf(expired.record.id), statusOf(adminA.record.id)], ['revoked', 'expired', 'active']);
    const table = (await cli(conn(operatorKey), ['key', 'list', '--team', 'team-a'])).stdout;
    assert.match(table.split('\n')[0] ?? '', /^ID +PREFIX +TEAM +ROLE +NAME +STATUS +CREATED +LAST USED +EXPIRES$/);
    for (const [id, status] of [[spare.id, /revoked \S+/], [expired.record.id, /expired \S+/], [adminA.record.id, /active/]] as const) {
      assert.match(table.split('\n').find((line) => line.startsWith(id)) ?? '', status, id);
    }
    assert.ok(!JSON.stringify(list).includes(spare.key), 'listing never shows a secret');
  });

  test("SSH: a key registered by one team does not open the other team's sandbox", async () => {
    const keyFile = (name: string): string => join(work, name);
    for (const name of ['id_a', 'id_b']) {
      const made = await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', keyFile(name)]);
      assert.equal(made.code, 0, made.stderr);
    }
    assert.equal((await cli(conn(keys.a), ['ssh-key', 'add', `${keyFile('id_a')}.pub`])).code, 0);
    assert.equal((await cli(conn(keys.b), ['ssh-key', 'add', `${keyFile('id_b')}.pub`])).code, 0);
    const port = String(server?.ssh?.port ?? 0);
    const ssh = (identity: string) => run('ssh', [...sshOptions(keyFile(identity)), '-p', port, `${sandboxA}@127.0.0.1`, 'echo', 'in']);
    const owner = await ssh('id_a');
    assert.deepEqual([owner.code, owner.stdout], [0, 'in\n'], owner.stderr);
    const other = await ssh('id_b');
    assert.equal(other.code, 255);
    assert.match(other.stderr, /Permission denied/);
    assert.equal(other.stdout, '');
  });

  test('quota: the maxRunning+1st create is 429 QUOTA_EXCEEDED and makes nothing; bad input changes nothing', async () => {
    const set = await cli(conn(operatorKey), ['team', 'quota', 'team-b', '--max-running', '1', '--json']);
    assert.equal(set.code, 0, set.stderr);
    assert.equal(JSON.parse(set.stdout).quota.maxRunning, 1);
    const first = await asB('POST', '/v1/sandboxes', { template: TEMPLATE });
    assert.equal(first.status, 201, JSON.stringify(first.json));
    const second = await asB('POST', '/v1/sandboxes', { template: TEMPLATE });
    assert.deepEqual([second.status, second.json.error.code, second.json.error.details.limit], [429, 'QUOTA_EXCEEDED', 'maxRunning']);
    const all = await asB('GET', '/v1/sandboxes?state=creating,running,pausing,paused,resuming,killing,killed,error');
    assert.deepEqual(all.json.sandboxes.map((s: { id: string }) => s.id), [first.json.id], 'the refused create left no sandbox');
    assert.equal((await asA('POST', `/v1/sandboxes/${sandboxA}/fork`, { count: 1 })).status, 201, "team-a's room is its own");

    const bad: Array<[string, string, unknown, number, string]> = [
      ['POST', '/v1/keys', { team: 'no-such-team' }, 404, 'TEAM_NOT_FOUND'],
      ['POST', '/v1/keys', { team: 'team-b', role: 'owner' }, 400, 'VALIDATION_FAILED'],
      ['PATCH', '/v1/teams/team-b', { quota: { maxRunning: -1 } }, 400, 'VALIDATION_FAILED'],
      ['POST', '/v1/teams', { id: 'Team C' }, 400, 'VALIDATION_FAILED'],
    ];
    for (const [method, path, body, status, code] of bad) {
      const r = await operator(method, path, body);
      assert.deepEqual([r.status, r.json.error.code], [status, code], `${method} ${path} ${JSON.stringify(body)}`);
    }
    assert.equal((await operator('GET', '/v1/teams/team-b')).json.quota.maxRunning, 1, 'the quota is unchanged');
    assert.deepEqual((await operator('GET', '/v1/teams')).json.teams.map((t: { id: string }) => t.id), ['default', 'team-a', 'team-b']);
    const usage = await cli(conn(operatorKey), ['team', 'quota', 'team-b', '--max-running', '-1']);
    assert.equal(usage.code, 2, 'the CLI refuses a negative limit as a usage error');
    const lifted = await cli(conn(operatorKey), ['team', 'quota', 'team-b', '--max-running', 'none', '--json']);
    assert.equal(lifted.code, 0, lifted.stderr);
    assert.equal(JSON.parse(lifted.stdout).quota.maxRunning, null, "'none' lifts the limit");
  });
});
