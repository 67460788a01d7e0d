#!/usr/bin/env node
// bench/lifecycle: medians of Ramify's create (from the warm pool: hit; restoring: miss), exec, pause,
// resume, fork x3 and fork x8, each next to the raw runtime steps it wraps, measured in the same run on
// the same template image, with the ratio; then the memory (PSS) of one idle pooled sandbox.
// A hit is a create while the pool holds an idle sandbox of the template; the miss is the create right
// after it (the pool refills only once the daemon is quiet). `GET /v1/health`'s hit and miss counters
// sort each create into its row.
//   flock /tmp/ramify-real-tests.lock node bench/lifecycle/run.mjs [--runtime gvisor|microvm] [--iterations 5]
//     [--daemon own|running] [--template base] [--log FILE]
// `--daemon own` (default): a daemon of this checkout in a process of its own (bench/support, prefix
// `rmbl`, a temp data dir, the prepared base rootfs as template `base`, `--warm-pool auto`, debug log to
// --log, default /tmp/ramify-bench-lifecycle-<runtime>.log: its `sandbox up`, `sandbox claimed`, `paused`
// and `forked` lines give each operation's phases). `--daemon running`: the `ramify serve` the SDK finds
// (RAMIFY_API_URL, default 127.0.0.1:7423) on RAMIFY_HOME (default /var/lib/ramify), with its templates.
// As root, packages built.
// Raw steps use the same building blocks the daemon uses underneath (NamespaceNetwork for the
// namespace setup; GvisorRuntime for `runsc restore`/`checkpoint`, or MicrovmRuntime for QEMU's
// incoming migration / migration to a file), in their own work dir, prefix and cgroup parent (the
// sandbox's limits applied by the runtime, as under the daemon). A microVM has no raw
// exec (its commands go through the agent): that row has no ratio. Pause includes the fsync of the
// image in both columns' durable variant (see the `pause` rows). Raw and Ramify iterations alternate,
// so that the load of a shared machine drifts under both columns alike.
// Forks are of the paused sandbox (the state a fork starts from: the image is already written), so
// their floor is that many raw restores of one image at once.
// What metering adds (the usage sampler on against off, same run): bench/lifecycle/metering.mjs.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, rmdir, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Sandbox, getHealth } from '@ramify/sdk';
import { NamespaceNetwork } from '@ramify/network';
import { GvisorRuntime } from '@ramify/runtime-gvisor';
import { MicrovmRuntime, detectAcceleration, prepareGuestKernel, qemuVersion } from '@ramify/runtime-microvm';
import { SqliteStore } from '@ramify/store';
import { MAX_SLOT } from '@ramify/network';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDaemonChild } from '../support/daemon-child.mjs';
import { ratioTarget, time, upperMedian } from '../support/stats.mjs';

const { values } = parseArgs({ options: { runtime: { type: 'string', default: 'gvisor' }, iterations: { type: 'string', default: '5' }, template: { type: 'string', default: 'base' }, daemon: { type: 'string', default: 'own' }, log: { type: 'string' } } });
const runtimeName = values.runtime;
if (runtimeName !== 'gvisor' && runtimeName !== 'microvm') throw new Error(`--runtime is gvisor or microvm, not '${runtimeName}'`);
if (values.daemon !== 'own' && values.daemon !== 'running') throw new Error(`--daemon is own or running, not '${values.daemon}'`);
const N = Number(values.iterations);
const loadAtStart = loadavg().map((l) => l.toFixed(2)).join(' ');
const logPath = values.log ?? `/tmp/ramify-bench-lifecycle-${runtimeName}.log`;
const daemon = values.daemon === 'own'
  ? await startDaemonChild('rmbl', { runtimes: [runtimeName], warmPool: 'auto', logLevel: 'debug' }, { logPath })
  : null;
if (daemon) Object.assign(process.env, { RAMIFY_API_URL: daemon.url, RAMIFY_API_KEY: daemon.key });
const home = daemon?.dataDir ?? process.env.RAMIFY_HOME ?? '/var/lib/ramify';
// Everything after the daemon started runs in this try: its finally stops the daemon (it removes what it made).
try {

const store = new SqliteStore({ path: join(home, 'ramify.db'), maxSlots: MAX_SLOT });
const template = await store.findTemplateByName(values.template, 'default');
if (!template) throw new Error(`template '${values.template}' is not built: run 'ramify template build ${values.template}'`);
const templateImage = join(home, 'snapshots', template.images.find((i) => i.runtime === runtimeName)?.snapshotId ?? '-', 'image');
if (!template.images.some((i) => i.runtime === runtimeName)) throw new Error(`template '${values.template}' has no ${runtimeName} image: run 'ramify template build ${values.template} --runtime ${runtimeName}'`);

/** fsync every file of an image and its directory: what makes a pause durable (snapshot storage does it). */
const syncImage = (dir) => spawnSync('sync', [dir, ...readdirSync(dir).map((f) => join(dir, f))]);

// ---- the raw runtime, same template image ----
const work = await mkdtemp(join(tmpdir(), 'rmf-bench-'));
await writeFile(join(work, 'resolv.conf'), 'nameserver 10.254.0.1\n');
const net = new NamespaceNetwork({ prefix: 'rmbn' });
// The raw runtime puts its sandboxes under a cgroup parent of its own, as the daemon does under /ramify:
// runsc then creates each sandbox's cgroups and applies its memoryMB and CPU limits, which is part of the
// runtime step (measured: a gVisor restore with cgroup v1 limits took 474 ms against 322 ms without).
const RAW_CGROUP = '/rmbn-raw';
const runtime = runtimeName === 'gvisor' ? await GvisorRuntime.open({ workDir: work, resolvConfPath: join(work, 'resolv.conf'), cgroupParent: RAW_CGROUP }) : await openMicrovm();
const raw = { create: [], exec: [], pause: [], pauseDurable: [], resume: [], restore8: [], checkpointRestore8: [] };
const spec = async (id, slot) => ({ sandboxId: id, rootfsDir: template.rootfsDir, hostname: id, resources: { cpuCount: 1, memoryMB: 512, diskSizeMB: null }, network: await net.attach(id, slot) });

/** The microVM runtime as the daemon opens it (packages/daemon/src/runtimes.ts), in this bench's work dir. */
async function openMicrovm() {
  const cacheDir = join(process.env.RAMIFY_CACHE_DIR ?? '/var/cache/ramify', 'microvm');
  const version = await qemuVersion('qemu-system-x86_64');
  const kernel = await prepareGuestKernel({ cacheDir });
  const acceleration = await detectAcceleration({ kernel, cacheDir, qemuVersion: version });
  return MicrovmRuntime.open({ workDir: work, kernel, acceleration, resolvConfPath: join(work, 'resolv.conf'), qemuVersion: version, cgroupParent: RAW_CGROUP });
}
/** One iteration of the raw steps: restore the template image, exec, checkpoint (+ fsync), restore it. */
async function rawIteration(i) {
  const id = `rmbn-${i}`;
  const [tc, s] = await time(async () => { const s = await spec(id, i + 1); await runtime.restore(s, templateImage); return s; });
  raw.create.push(tc);
  if (runtimeName === 'gvisor') {
    // What `commands.run('true')` wraps: a bash -c in the sandbox (runtime.containerOf: runsc's id of the incarnation).
    const containerId = await runtime.containerOf(id);
    const [te] = await time(async () => spawnSync('nsenter', [`--net=${s.network.netnsPath}`, 'runsc', '--root', join(work, 'state'), 'exec', containerId, '/bin/bash', '-c', 'true']));
    raw.exec.push(te);
  }
  const img = join(work, `img-${i}`);
  const [tp] = await time(() => runtime.checkpoint(id, img));
  raw.pause.push(tp);
  const [ts] = await time(async () => syncImage(img));
  raw.pauseDurable.push(tp + ts);
  const [tr] = await time(async () => runtime.restore(await spec(id, i + 1), img));
  raw.resume.push(tr);
  await runtime.kill(id);
  // Kept: the first image is the fork point of the eight-at-once restores.
  if (i > 0) await rm(img, { recursive: true, force: true });
}
/** The floor of a fork x8 on this machine: eight raw restores of one image at once, namespaces ready. */
let specs8 = null;
async function rawRestore8() {
  specs8 ??= await Promise.all(Array.from({ length: 8 }, (_, k) => spec(`rmbn-par-${k}`, 20 + k)));
  const [t8] = await time(() => Promise.all(specs8.map((s) => runtime.restore(s, join(work, 'img-0')))));
  raw.restore8.push(t8);
  await Promise.all(specs8.map((s) => runtime.kill(s.sandboxId)));
}

// ---- Ramify, through the SDK and the daemon ----
const poolOf = async () => (await getHealth()).pool;
/** Wait (bounded) until the pool holds an idle sandbox on this runtime, then for the daemon to be quiet. */
async function poolReady() {
  for (let waited = 0; waited < 300_000; waited += 200) {
    const pool = await poolOf();
    if (pool.mode === 'off') return false;
    if ((pool.runtimes[runtimeName]?.idle ?? 0) > 0) return (await sleep(500), true);
    await sleep(200);
  }
  return false;
}
/**
 * Wait (bounded) until the runtime holds only the listed sandboxes and the pool's: killed sandboxes are
 * deleted in the background (~1.5 s of runsc each, eight after a fork x8), which would weigh on the next
 * measurement and not on the raw steps'.
 */
async function settle() {
  for (let waited = 0; waited < 60_000; waited += 200) {
    const listed = new Set();
    for await (const info of Sandbox.list()) listed.add(info.id);
    const pool = await poolOf();
    if (runtimeIds().length <= listed.size + (pool.runtimes[runtimeName]?.idle ?? 0) + pool.filling) return;
    await sleep(200);
  }
}

/** Create one sandbox; `hit` says whether the pool served it (from the health counters around it). */
async function create(extra = {}) {
  const before = await poolOf();
  const [ms, sbx] = await time(() => Sandbox.create({ template: values.template, runtime: runtimeName, timeoutMs: 600_000, ...extra }));
  return { ms, sbx, hit: (await poolOf()).hits > before.hits };
}
const ours = { hit: [], miss: [], exec: [], pause: [], resume: [], fork3: [], fork8: [], fork8Running: [] };
/** Fork `sbx` `count` times; the children are killed (and their runtime state deleted) before it returns. */
async function timedFork(sbx, count, into) {
  await settle();
  const [ms, children] = await time(() => sbx.fork({ count }));
  into.push(ms);
  await Promise.all(children.map((f) => f.kill()));
}
/** One iteration through the daemon: a hit and a miss, exec, pause, forks of the paused sandbox, resume. */
async function oursIteration(i) {
  await poolReady();
  await settle();
  const first = await create();
  const second = await create();
  for (const c of [first, second]) (c.hit ? ours.hit : ours.miss).push(c.ms);
  await second.sbx.kill();
  // The kill's runsc delete (~1.5 s) and the pool's refill after the hit run in the background: measured
  // alongside, they weighed on the exec and pause that follow and on none of the raw steps.
  await settle();
  await poolReady();
  const sbx = first.sbx;
  ours.exec.push((await time(() => sbx.commands.run('true')))[0]);
  ours.pause.push((await time(() => sbx.pause()))[0]);
  if (i < 3) {
    // Forks of the paused sandbox: the fork point is its pause image, no checkpoint.
    await timedFork(sbx, 3, ours.fork3);
    await timedFork(sbx, 8, ours.fork8);
  }
  await settle();
  ours.resume.push((await time(() => sbx.resume()))[0]);
  // Once: a fork of the running sandbox (a checkpoint, the children, and the parent restored beside them).
  if (i === 0) await timedFork(sbx, 8, ours.fork8Running);
  await sbx.kill();
}
// The first create marks the template as used (an `auto` pool then fills it).
await (await Sandbox.create({ template: values.template, runtime: runtimeName })).kill();
try {
  // Raw and Ramify alternate, one iteration each: on a shared machine the load drifts, and a ratio of
  // two columns measured minutes apart would measure the drift.
  for (let i = 0; i < N; i++) {
    await rawIteration(i);
    if (i < 3) await rawRestore8();
    await runtime.settle?.();
    await oursIteration(i);
  }
  raw.checkpointRestore8.push(...raw.restore8.map((t8) => t8 + upperMedian(raw.pause)));
} finally {
  await net.destroyAll();
  await runtime.settle?.();
  await removeCgroupParent(RAW_CGROUP);
  await rm(work, { recursive: true, force: true });
}

/** Remove the raw runtime's (now empty) cgroup parent from every hierarchy (v1: one per controller; v2: one). */
async function removeCgroupParent(parent) {
  const roots = readdirSync('/sys/fs/cgroup', { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => join('/sys/fs/cgroup', e.name)).concat('/sys/fs/cgroup');
  for (let attempt = 0; attempt < 20; attempt++) {
    const left = roots.map((r) => join(r, parent)).filter((d) => existsSync(d));
    for (const dir of left) await rmdir(dir).catch(() => undefined);
    if (left.every((d) => !existsSync(d))) return;
    await new Promise((resolve) => setTimeout(resolve, 250)); // runsc deletes a sandbox's own cgroups in the background
  }
}

const steps = runtimeName === 'gvisor'
  ? { create: 'netns setup + runsc restore', exec: 'runsc exec bash -c true', pause: 'runsc checkpoint', resume: 'runsc restore (own netns)', one: 'one runsc restore', eight: '8 runsc restores at once (floor on this machine)' }
  : { create: 'netns setup + QEMU restore', exec: '(no raw exec: the agent runs commands)', pause: 'QEMU migration to the image', resume: 'QEMU restore (own netns)', one: 'one QEMU restore', eight: '8 QEMU restores at once (floor on this machine)' };
// A pool that holds more than one idle sandbox serves both creates: misses then come from a size it does not hold.
for (let i = 0; ours.miss.length < Math.min(N, 3) && i < N; i++) {
  const c = await create({ memoryMB: 768 });
  if (!c.hit) ours.miss.push(c.ms);
  await c.sbx.kill();
}
const pss = await idlePoolPss();
const rows = [
  ['create (hit)', ours.hit, raw.resume, `${steps.one}: the pool's sandbox was restored ahead`, 0.1],
  ['create (miss)', ours.miss, raw.create, steps.create, 1.3],
  ['exec', ours.exec, raw.exec, steps.exec, 1.5],
  ['pause', ours.pause, raw.pause, steps.pause, null],
  ['pause', ours.pause, raw.pauseDurable, `${steps.pause} + fsync of the image (what Ramify does)`, 1.3],
  ['resume', ours.resume, raw.resume, steps.resume, 1.3],
  ['fork x3 (paused)', ours.fork3, raw.resume, steps.one, null],
  ['fork x8 (paused)', ours.fork8, raw.resume, steps.one, null],
  ['fork x8 (paused)', ours.fork8, raw.restore8, `${steps.eight}: a paused parent's image is the fork point`, 1.3],
  ['fork x8 (running)', ours.fork8Running, raw.checkpointRestore8, `${steps.pause} + ${steps.eight}: the parent is checkpointed and comes back too`, null],
];
console.log(`bench/lifecycle: ${runtimeName} (${runtime.summary ?? runtime.name}), ${N} iterations (fork: ${ours.fork3.length}), template '${values.template}', ${daemon ? `this checkout's daemon (log: ${logPath})` : 'the running daemon'}, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')} (at start: ${loadAtStart}), medians in ms`);
console.log(['operation', 'ramify', 'raw', 'ratio', 'target', 'raw step'].join('\t'));
for (const [name, o, r, what, target] of rows) {
  if (o.length === 0) {
    console.log([name, '-', r.length ? upperMedian(r).toFixed(1) : '-', '-', target ? `<= ${target}x MISSED (none measured)` : '-', what].join('\t'));
    continue;
  }
  if (r.length === 0) {
    console.log([name, upperMedian(o).toFixed(1), '-', '-', '-', what].join('\t'));
    continue;
  }
  const ratio = upperMedian(o) / upperMedian(r);
  console.log([name, upperMedian(o).toFixed(1), upperMedian(r).toFixed(1), `${ratio.toFixed(2)}x`, target ? ratioTarget(ratio, target) : '-', what].join('\t'));
}
console.log(pss
  ? `warm pool: ${pss.count} idle ${runtimeName} sandbox(es) of '${values.template}', PSS per sandbox ${(pss.perSandboxBytes / 2 ** 20).toFixed(1)} MiB (${pss.processes} processes; memoryMB budget ${pss.budgetMB} MB)`
  : 'warm pool: off or empty on this daemon (ramify serve --warm-pool auto): no PSS measured');

/**
 * The proportional set size of the idle pooled sandboxes on this runtime: the sandboxes the runtime runs
 * that no listing shows, each the sum of PSS over the host processes whose command line names it
 * (runsc sandbox, gofer and agent bridge; QEMU). Null when the pool holds none.
 */
async function idlePoolPss() {
  if (!(await poolReady())) return null;
  const pool = await poolOf();
  const listed = new Set();
  for await (const info of Sandbox.list()) listed.add(info.id);
  const ids = runtimeIds('running').filter((id) => !listed.has(id));
  let bytes = 0;
  let processes = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let cmdline = '';
    try { cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8'); } catch { continue; }
    if (!ids.some((id) => cmdline.includes(id))) continue;
    try {
      const kb = Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
      bytes += kb * 1024;
      processes += 1;
    } catch { /* gone meanwhile */ }
  }
  return ids.length === 0 ? null : { count: ids.length, perSandboxBytes: bytes / ids.length, processes, budgetMB: pool.budgetMB };
}

/**
 * Sandbox ids the daemon's runtime has state for (runsc containers, microVM instance directories);
 * `running` only: without killed containers still being deleted in the background.
 */
function runtimeIds(which = 'all') {
  if (runtimeName === 'gvisor') {
    const r = spawnSync('runsc', ['--root', join(home, 'runtime', 'gvisor', 'state'), 'list', '-format', 'json'], { encoding: 'utf8' });
    const containers = JSON.parse(r.stdout || '[]') ?? [];
    return containers.filter((c) => which === 'all' || c.status === 'running').map((c) => c.id.split('.')[0]);
  }
  try { return readdirSync(join(home, 'runtime', 'microvm', 'run')); } catch { return []; }
}
} finally {
  await daemon?.stop();
}
