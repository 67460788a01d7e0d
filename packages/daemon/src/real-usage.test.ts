/**
 * Metering and budgets through a REAL daemon (gVisor runsc, namespaces, the sandboxes' cgroups), one
 * daemon for both (sampling every second).
 *
 * Metering: a sandbox runs a CPU-bound loop for ~3 s, pauses, resumes and forks; its CPU-seconds match
 * what its incarnations' cgroups say (within 10 %), its running and paused seconds the wall clock (within 1 s), the fork's usage is under
 * the same tree, and bytes out of it are counted. Then the daemon is closed between two samples and a new
 * one started on the same data (`close()` writes no usage: the meter writes only at samples and state
 * changes, so for metering this is a kill -9 between samples): the totals neither drop nor double count,
 * and a loop run across the restart is counted once. Live metrics and the CLI's `usage --csv`,
 * `sandbox tree` and `sandbox metrics`.
 *
 * Budgets, through the SDK: `Sandbox.explore` with `budget: { cpuSeconds: 5 }` over a strategy that finishes
 * at once and one that spins forever. At the first sample after the tree passed 5 CPU-seconds the daemon
 * emits the budget event on its bus and pauses the whole tree (the source and both forks; never a kill);
 * explore stops waiting and returns its report (`stoppedBy: 'budget'`): the finished strategy is the
 * winner, the spinning one is stopped with its fork left `paused`. Forks and resumes in the
 * tree are then 429 BUDGET_EXCEEDED (and the CLI shows the tree); after `ramify sandbox budget` raises it,
 * the paused forks resume and run.
 *
 * Skipped, with the reason, when not root, without runsc, or without the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SandboxBudgetEvent } from '@ramify/core';
import { layoutForPrefix, slotAddresses } from '@ramify/network';
import { Sandbox, type Strategy } from '@ramify/sdk';
import type { GvisorRuntime } from '@ramify/runtime-gvisor';
import { serve, type RamifyServer } from './serve.js';
import { cli } from './real-ssh-support.js';
import { apiCaller, realRuntimeSkip, registerRootfsTemplate, shellCaller, stopRealDaemon, until } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs);

const PREFIX = 'rmu';
const SAMPLE_MS = 1_000;
let dataDir: string;
let server: RamifyServer | undefined;
let key = '';
const call = apiCaller(() => server?.url, () => key);
const sh = shellCaller(call);

const start = (): Promise<RamifyServer> =>
  serve({ dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX }, coreOptions: { usageSampleMs: SAMPLE_MS } });

/** The CPU time of the sandbox's current incarnation, µs, read from its cgroup's files here (v1 cpuacct, else v2 cpu.stat). */
async function cgroupCpuUs(id: string): Promise<number> {
  const containerId = await (server!.core.runtimes[0] as GvisorRuntime).containerOf(id);
  const v1 = await readFile(`/sys/fs/cgroup/cpuacct/ramify/${containerId}/cpuacct.usage`, 'utf8').catch(() => null);
  if (v1 !== null) return Number(v1) / 1000;
  const v2 = await readFile(`/sys/fs/cgroup/ramify/${containerId}/cpu.stat`, 'utf8');
  return Number(/^usage_usec (\d+)$/m.exec(v2)?.[1]);
}

/** One sandbox's metered figures (all time). */
async function usageOf(id: string): Promise<{ cpuSeconds: number; runningSeconds: number; pausedSeconds: number; netOutBytes: number }> {
  const r = await call('GET', `/v1/usage?from=2000-01-01&sandboxId=${id}`);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return r.json.rows[0];
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const within = (actual: number, expected: number, fraction: number, what: string): void =>
  assert.ok(Math.abs(actual - expected) <= expected * fraction, `${what}: metered ${actual.toFixed(3)}, expected ${expected.toFixed(3)} ±${fraction * 100}%`);

describe('real metering and budgets (gVisor)', { skip, timeout: 600_000 }, () => {
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-usage-e2e-'));
    server = await start();
    key = server.newApiKey ?? '';
    await registerRootfsTemplate(server.core, rootfs as string, { templateId: 'tpl_rmu', snapshotId: 'snap_rmu_base' });
  });
  after(async () => {
    spawnSync('umount', [join(dataDir, 'snapshots', 'snap_rmu_base')]);
    if (server) await stopRealDaemon(server, call);
    await rm(dataDir, { recursive: true, force: true });
  });

  test('CPU, running and paused time across pause, resume, fork and a daemon restart between samples', async () => {
    const created = await call('POST', '/v1/sandboxes', {});
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const id = created.json.id as string;
    const createdAt = Date.parse(created.json.createdAt);
    await sh(id, 'timeout 3 sh -c "while :; do :; done"; true');
    // Bytes out: 200 kB of datagrams to the host's end of the sandbox's link (a port nothing listens on):
    // the link counts them all the same.
    const { hostAddress } = slotAddresses(layoutForPrefix(PREFIX), (await server!.core.store.getSandbox(id))?.slot as number);
    await sh(id, `python3 -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); [s.sendto(b'x'*1000, ('${hostAddress}', 9)) for _ in range(200)]"`);
    const cpu1 = await cgroupCpuUs(id);
    assert.equal((await call('POST', `/v1/sandboxes/${id}/pause`)).json.state, 'paused');
    const pausedAt = Date.now();
    await sleep(2_000);
    const resumeAt = Date.now();
    assert.equal((await call('POST', `/v1/sandboxes/${id}/resume`)).json.state, 'running');
    const pausedFor = (resumeAt - pausedAt) / 1000;
    await sh(id, 'timeout 1 sh -c "while :; do :; done"; true');
    const cpu2 = await cgroupCpuUs(id);
    const forked = await call('POST', `/v1/sandboxes/${id}/fork`, { count: 1 });
    assert.equal(forked.status, 201, JSON.stringify(forked.json));
    const child = forked.json.sandboxes[0].id as string;
    await sleep(2 * SAMPLE_MS + 500);
    let metered = await usageOf(id);
    const expectedCpu = (cpu1 + cpu2 + (await cgroupCpuUs(id))) / 1e6;
    process.stdout.write(`# ${id}: metered ${metered.cpuSeconds.toFixed(3)} CPU-s, its incarnations' cgroups ${expectedCpu.toFixed(3)}; running ${metered.runningSeconds.toFixed(2)} s, paused ${metered.pausedSeconds.toFixed(2)} s (measured ${pausedFor.toFixed(2)}); out ${metered.netOutBytes} B\n`);
    within(metered.cpuSeconds, expectedCpu, 0.1, 'CPU-seconds vs the cgroups');
    assert.ok(metered.cpuSeconds > 3, 'the 3 s loop and the 1 s one');
    assert.ok(Math.abs(metered.pausedSeconds - pausedFor) < 1, 'paused seconds within 1 s');
    const lifetime = (Date.now() - createdAt) / 1000;
    assert.ok(Math.abs(metered.runningSeconds + metered.pausedSeconds - lifetime) < 1, `running + paused = its lifetime (${lifetime.toFixed(2)} s) within 1 s`);
    assert.ok(metered.netOutBytes >= 200_000, 'the datagrams out');
    const tree = await call('GET', '/v1/usage?from=2000-01-01&groupBy=tree');
    const row = tree.json.rows.find((r: { key: string }) => r.key === id);
    assert.equal(row?.sandboxes, 2, 'the fork is under the same tree');
    assert.ok(row.cpuSeconds > metered.cpuSeconds, "the tree has the fork's CPU too");
    const samples = await call('GET', `/v1/sandboxes/${child}/metrics`);
    assert.ok(samples.json.metrics.length >= 1, 'a live sample of the fork');
    assert.ok(samples.json.metrics[0].memUsed > 0 && samples.json.metrics[0].memTotal === 512 * 1024 * 1024);

    // A loop across the restart, in the fork: counted once, from its cgroup.
    await call('POST', `/v1/sandboxes/${child}/commands`, { cmd: 'timeout 4 sh -c "while :; do :; done"', background: true });
    await sleep(SAMPLE_MS + 300);
    const beforeClose = await usageOf(child);
    await server!.close();
    await sleep(2_500);
    server = await start();
    await until(async () => (await call('GET', `/v1/sandboxes/${child}`)).json?.state === 'running', 'the fork is re-attached');
    await sleep(3 * SAMPLE_MS + 1_500);
    const afterRestart = await usageOf(child);
    const childCgroup = (await cgroupCpuUs(child)) / 1e6;
    process.stdout.write(`# fork ${child}: ${beforeClose.cpuSeconds.toFixed(3)} CPU-s before the close, ${afterRestart.cpuSeconds.toFixed(3)} after the restart, its cgroup ${childCgroup.toFixed(3)}\n`);
    within(afterRestart.cpuSeconds, childCgroup, 0.1, "the fork's CPU-seconds vs its cgroup after the restart");
    assert.ok(afterRestart.cpuSeconds > beforeClose.cpuSeconds + 1, 'the loop during and after the downtime is counted');
    const childInfo = (await call('GET', `/v1/sandboxes/${child}`)).json;
    assert.ok(Math.abs(afterRestart.runningSeconds - (Date.now() - Date.parse(childInfo.createdAt)) / 1000) < 1, 'the downtime ran: running seconds within 1 s');
    metered = await usageOf(id);
    within(metered.cpuSeconds, (cpu1 + cpu2 + (await cgroupCpuUs(id))) / 1e6, 0.1, "the parent's CPU-seconds after the restart");

    // The CLI over the same figures.
    const conn = { apiUrl: server.url, apiKey: key };
    const csv = await cli(conn, ['usage', '--from', '2000-01-01', '--group-by', 'tree', '--csv']);
    assert.equal(csv.code, 0, csv.stderr);
    assert.match(csv.stdout.split('\n')[0] ?? '', /^tree,sandboxes,runningSeconds,pausedSeconds,cpuSeconds,/);
    assert.match(csv.stdout, new RegExp(`^${id},2,`, 'm'));
    const treeText = await cli(conn, ['sandbox', 'tree', child]);
    assert.equal(treeText.code, 0, treeText.stderr);
    assert.match(treeText.stdout, new RegExp(`^${id}  running  cpu [\\d.]+s`));
    assert.match(treeText.stdout, new RegExp(`└─ ${child}  running`));
    const metricsJson = await cli(conn, ['sandbox', 'metrics', child, '--json']);
    assert.equal(metricsJson.code, 0, metricsJson.stderr);
    const points = JSON.parse(metricsJson.stdout) as Array<{ cpuCount: number; memTotal: number }>;
    assert.ok(points.length >= 2, 'samples of the new daemon');
    assert.deepEqual([points[0]?.cpuCount, points[0]?.memTotal], [1, 512 * 1024 * 1024]);
    const metricsText = await cli(conn, ['sandbox', 'metrics', child]);
    assert.match(metricsText.stdout, /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\]  CPU: +[\d.]+% \/  1 Cores \| Memory: +\d+ \/ 512 MiB \| Disk: - \(in memory\)$/m);
  });

  test('explore with cpuSeconds 5 over a quick and a spinning strategy: the report says stopped by the budget, the tree is paused, the event emitted, forks resumable after a raise', async () => {
    const conn = { apiUrl: server!.url, apiKey: key, requestTimeoutMs: 600_000 };
    const events: SandboxBudgetEvent[] = [];
    server!.core.events.onBudget((e) => events.push(e));
    const source = await Sandbox.create({ ...conn, template: 'base', timeoutMs: 600_000 });
    const quick: Strategy<number | null> = { name: 'quick', run: async (sbx) => (await sbx.commands.run('echo done')).exitCode };
    let spinRun: Promise<unknown> = Promise.resolve();
    const spin: Strategy<number | null> = { name: 'spin', run: async (sbx) => {
      spinRun = sbx.commands.run('sh -c "while :; do :; done"', { timeoutMs: 0 });
      return ((await spinRun) as { exitCode: number }).exitCode;
    } };
    const explored = await Sandbox.explore(source, [quick, spin], { score: () => 1, budget: { cpuSeconds: 5 }, budgetPollMs: 250 });
    // The stopped strategy's command stops waiting for a resume (a script would otherwise never exit).
    await assert.rejects(spinRun, { code: 'BUDGET_EXCEEDED' });
    assert.equal(explored.stoppedBy, 'budget', 'a report, not an error: what finished is usable');
    assert.deepEqual([explored.winner?.strategy, explored.winner?.result], ['quick', 0]);
    assert.deepEqual(explored.entries.map((e) => [e.name, e.status, e.outcome, e.error?.code ?? null]), [['quick', 'finished', 'winner', null], ['spin', 'stopped', 'paused', 'BUDGET_EXCEEDED']]);
    if (explored.stoppedBy === 'budget') assert.equal(explored.budget.exceeded, 'cpuSeconds');
    const forks = explored.entries.map((e) => e.sandboxId);

    assert.equal(events.length, 1, 'one budget event');
    const [event] = events;
    assert.equal(event?.rootId, source.sandboxId);
    assert.equal(event?.limit, 'cpuSeconds');
    assert.equal(event?.max, 5);
    // Found at the first sample past 5 CPU-seconds: the spinning fork adds at most a CPU-second per sampling
    // interval (1 s here; with 2 cores and 3 intervals of slack for a loaded host).
    assert.ok(event!.used >= 5 && event!.used < 5 + 2 * 3 * (SAMPLE_MS / 1000), `used ${event!.used} when found`);
    // Explore returns once the budget is marked exceeded; the daemon's pauses of the tree are under way.
    for (const id of [source.sandboxId, ...forks]) {
      await until(async () => (await Sandbox.getInfo(id, conn)).state === 'paused', `${id} is paused`, 60_000);
    }
    const [budget] = await source.getBudgets();
    process.stdout.write(`# budget event at ${event!.used.toFixed(2)} CPU-s; the tree had used ${budget!.used.cpuSeconds} CPU-s once paused\n`);
    assert.equal(budget?.exceeded, 'cpuSeconds');

    const fork = await call('POST', `/v1/sandboxes/${forks[0]}/fork`, { count: 1 });
    assert.equal(fork.status, 429);
    assert.equal(fork.json.error.code, 'BUDGET_EXCEEDED');
    const resume = await call('POST', `/v1/sandboxes/${forks[1]}/resume`);
    assert.equal(resume.status, 429);
    assert.equal(resume.json.error.details.sandboxId, source.sandboxId);
    const tree = await cli(conn, ['sandbox', 'tree', forks[0]!, '--json']);
    assert.equal(tree.code, 0, tree.stderr);
    const view = JSON.parse(tree.stdout) as { rootId: string; size: number; root: { state: string; budget: { exceeded: string }; children: Array<{ state: string }> } };
    assert.deepEqual([view.rootId, view.size, view.root.state, view.root.budget.exceeded, view.root.children.map((c) => c.state)], [source.sandboxId, 3, 'paused', 'cpuSeconds', ['paused', 'paused']]);

    const raised = await cli(conn, ['sandbox', 'budget', source.sandboxId, '--cpu-seconds', '1000', '--max-sandboxes', '10', '--json']);
    assert.equal(raised.code, 0, raised.stderr);
    assert.deepEqual([JSON.parse(raised.stdout).exceeded, JSON.parse(raised.stdout).limits.cpuSeconds, JSON.parse(raised.stdout).limits.maxSandboxes], [null, 1000, 10]);
    const lifted = await cli(conn, ['sandbox', 'budget', source.sandboxId, '--max-sandboxes', 'none', '--json']);
    assert.equal(lifted.code, 0, lifted.stderr);
    assert.deepEqual([JSON.parse(lifted.stdout).limits.cpuSeconds, JSON.parse(lifted.stdout).limits.maxSandboxes], [1000, null], "'none' lifts one limit, keeps the others");
    for (const id of forks) assert.equal((await Sandbox.resume(id, conn)).state, 'running');
    // The spin goes on where it stopped: the spinning fork uses CPU again.
    const before = (await source.getBudgets())[0]!.used.cpuSeconds;
    await new Promise((resolve) => setTimeout(resolve, 3 * SAMPLE_MS));
    assert.ok((await source.getBudgets())[0]!.used.cpuSeconds > before + 1, 'the resumed forks spin on');
    for (const id of [...forks, source.sandboxId]) await Sandbox.kill(id, conn);
  });
});
