/**
 * The warm pool (issue 13) on REAL gVisor sandboxes of a REAL daemon (a child process, prefix `rwp`,
 * egress enforcement on, `warmPool: base=2`) with the fake internet as the only destination:
 * pooled sandboxes are in no listing; two claimed ones differ in id, hostname and /dev/urandom bytes and
 * have the host's clock, the request's envs and metadata (`/run/ramify/metadata.json`) from their first command; a pooled sandbox created under deny-all reaches
 * nothing even with a connect loop as its very first command (and one created open does reach, so the
 * loop can tell); misses (an odd memory size, an empty pool) still create, and a restored one's first command
 * sees its envs and metadata too; a clean stop with a full pool
 * leaves no sandbox, namespace or table (the rig checks); with RAMIFY_TEST_FULL=1, a SIGKILLed daemon's
 * pooled sandboxes are removed by the next one, which fills its own.
 * Skipped, with the reason, when not root, without runsc/nft, or without the prepared rootfs.
 */
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hostnameFor } from '@ramify/core';
import { run } from '@ramify/network';
import { join } from 'node:path';
import { apiCaller, realRuntimeSkip, until } from './real-test-support.js';
import { SandboxShell } from './real-egress-probe.js';
import { assertNothingReached } from './real-egress-evidence.js';
import { EvidenceRig } from './real-egress-rig.js';
import { NET, flowsTo } from './real-egress-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const FULL = process.env.RAMIFY_TEST_FULL === '1';
const skip = realRuntimeSkip(rootfs, ['runsc', 'nft']);

const env = new EvidenceRig({ prefix: 'rwp', watch: { forward: 'rwpwfwd', input: 'rwpwin', rig: 'rwpwrig' }, dataDirPrefix: 'ramify-pool-', rootfs: rootfs ?? '', warmPool: 'base=2' });
const call = apiCaller(() => env.daemon?.url, () => env.daemon?.key ?? '');
const shell = new SandboxShell(call, () => env.daemon?.url ?? '', () => env.daemon?.key ?? '');

interface PoolHealth {
  hits: number;
  misses: { empty: number; resources: number };
  idle: number;
}
const pool = async (): Promise<PoolHealth> => (await call('GET', '/v1/health')).json.pool as PoolHealth;
const poolHolds = (n: number): Promise<void> => until(async () => (await pool()).idle >= n, `the warm pool holds ${n} idle sandboxes`, 180_000);

/** Sandboxes a test made: killed after each test, whatever its outcome. */
const made: string[] = [];

async function create(body: Record<string, unknown>): Promise<string> {
  const r = await call('POST', '/v1/sandboxes', { template: 'base', ...body });
  assert.equal(r.status, 201, JSON.stringify(r.json));
  made.push(r.json.id as string);
  return r.json.id as string;
}

/** The daemon's runsc containers (sandbox ids). */
async function containers(): Promise<string[]> {
  const list = await run(['runsc', '--root', join(env.dataDir, 'runtime', 'gvisor', 'state'), 'list', '-quiet']);
  return list.stdout.split('\n').filter(Boolean).map((id) => id.split('.')[0]!);
}

/**
 * Twenty round trips to the fake internet's echo server (port 8080: not one the egress proxy answers for
 * the host), each bounded to 0.3 s; `OPEN` per echo received. The sandbox's first command.
 */
const CONNECT_LOOP =
  `for i in $(seq 1 20); do timeout 0.3 bash -c 'exec 3<>/dev/tcp/${NET.echo}/8080 && echo ping >&3 && read -r line <&3 && [ "$line" = ping ] && echo OPEN' 2>/dev/null; done; echo END`;

describe('warm pool (real gVisor, real daemon)', { skip }, () => {
  before(async () => {
    await env.start();
  });
  afterEach(async () => {
    for (const id of made.splice(0)) await call('DELETE', `/v1/sandboxes/${id}`);
  });
  after(async () => {
    await env.stop();
  });

  test('pooled sandboxes are in no listing; two claimed ones differ in id, hostname and entropy, with the host clock, their envs and metadata', async () => {
    await poolHolds(2);
    assert.deepEqual((await call('GET', '/v1/sandboxes')).json.sandboxes, [], 'idle pooled sandboxes are listed nowhere');
    const before = await pool();
    const ids = [await create({ envs: { WHO: 'first' }, metadata: { run: 'first' } }), await create({ envs: { WHO: 'second' }, metadata: { run: 'second' } })];
    assert.equal((await pool()).hits - before.hits, 2, 'both came from the pool');
    assert.notEqual(ids[0], ids[1]);
    const seen = [];
    for (const [i, id] of ids.entries()) {
      // The sandbox's first command.
      const out = (await shell.sh(id, 'echo "$WHO"; hostname; head -c 16 /dev/urandom | od -An -tx1 | tr -d " \\n"; echo; date +%s%3N; cat /run/ramify/metadata.json')).trim().split('\n');
      const [who, hostname, random, clock, metadata] = out;
      assert.equal(who, ['first', 'second'][i], 'the request\'s envs reach the first command');
      assert.deepEqual(JSON.parse(metadata ?? 'null'), { run: ['first', 'second'][i] }, 'the request\'s metadata reaches the first command');
      assert.equal(hostname, hostnameFor(id), 'its own hostname');
      assert.ok(Math.abs(Number(clock) - Date.now()) < 5_000, `its clock is the host's (${clock} vs ${Date.now()})`);
      const info = (await call('GET', `/v1/sandboxes/${id}`)).json;
      assert.deepEqual(info.metadata, { run: ['first', 'second'][i] });
      assert.equal(info.state, 'running');
      seen.push({ hostname, random });
    }
    assert.notEqual(seen[0]!.hostname, seen[1]!.hostname);
    assert.notEqual(seen[0]!.random, seen[1]!.random, 'different /dev/urandom bytes');
  });

  test('a pooled sandbox created under deny-all reaches nothing, even with a connect loop as its first command', async () => {
    await poolHolds(2);
    const before = await pool();
    await env.evidence!.clear();
    const denied = await create({ egress: { mode: 'deny-all' } });
    const closed = await shell.exec(denied, CONNECT_LOOP);
    assert.match(closed.stdout, /END/);
    assert.doesNotMatch(closed.stdout, /OPEN/, 'no connect got through');
    assertNothingReached(await env.evidence!.collect(), NET.echo, 8080, 'deny-all from the pool');

    // The same loop in a pooled sandbox created open does connect: the loop can tell.
    await env.evidence!.clear();
    const open = await create({});
    const opened = await shell.exec(open, CONNECT_LOOP);
    assert.match(opened.stdout, /OPEN/);
    assert.ok(flowsTo((await env.evidence!.collect()).rigFlows, NET.echo, 8080).length > 0, 'the open sandbox\'s packets reached the fake internet');
    assert.equal((await pool()).hits - before.hits, 2, 'both came from the pool');
  });

  test('misses still create: a memory size the pool does not hold, and an empty pool', async () => {
    await poolHolds(2);
    const before = await pool();
    const odd = await create({ memoryMB: 700, envs: { WHO: 'odd' }, metadata: { run: 'odd' } });
    // Restored, not claimed: its first command sees the request's envs, metadata and hostname too (the
    // hostname set by the agent's system-call helper: gVisor refuses it through procfs).
    assert.deepEqual(
      (await shell.sh(odd, 'echo "$WHO"; cat /run/ramify/metadata.json; hostname; pgrep -f ramify-agent-helper >/dev/null && echo helper')).trim().split('\n'),
      ['odd', '{"run":"odd"}', hostnameFor(odd), 'helper'],
    );
    assert.equal((await call('GET', `/v1/sandboxes/${odd}`)).json.memoryMB, 700);
    const afterOdd = await pool();
    assert.equal(afterOdd.misses.resources - before.misses.resources, 1);
    assert.equal(afterOdd.hits, before.hits);

    // Three at once from a pool of two: one restores.
    const three = await Promise.all([create({}), create({}), create({})]);
    const afterThree = await pool();
    assert.equal(afterThree.hits - afterOdd.hits, 2);
    assert.equal(afterThree.misses.empty - afterOdd.misses.empty, 1);
    for (const id of three) assert.equal((await shell.sh(id, 'echo ok')).trim(), 'ok');
  });

  test('after a SIGKILL, the next daemon removes the pooled sandboxes it finds and fills its own', { skip: FULL ? false : 'RAMIFY_TEST_FULL=1 only: two more pool fills (a clean stop is checked by every run: the rig finds nothing left)' }, async () => {
    await poolHolds(2);
    // The sandboxes earlier tests killed are deleted in the background (~1.5 s of runsc each).
    await until(async () => (await containers()).length === 2, 'only the two pooled sandboxes run', 60_000);
    const old = await containers();
    await env.daemon!.kill9();
    await env.daemon!.start();
    await poolHolds(2);
    const now = await containers();
    assert.equal(now.length, 2, `the new daemon's pool only: ${now.join(', ')}`);
    assert.deepEqual(now.filter((id) => old.includes(id)), [], 'the old pooled sandboxes are gone');
    assert.deepEqual((await call('GET', '/v1/sandboxes')).json.sandboxes, []);
  });
});
