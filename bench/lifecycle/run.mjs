#!/usr/bin/env node
// bench/lifecycle: medians of Ramify's create, exec, pause, resume, fork x3 and fork x8, each next to
// the raw runtime steps it wraps, measured in the same run on the same template image, with the ratio.
//   node bench/lifecycle/run.mjs [--runtime gvisor|microvm] [--iterations 5] [--template base]
// Needs a running `ramify serve` (bash scripts/setup.sh starts one) and root.
// Raw steps use the same building blocks the daemon uses underneath (NamespaceNetwork for the
// namespace setup; GvisorRuntime for `runsc restore`/`checkpoint`, or MicrovmRuntime for QEMU's
// incoming migration / migration to a file), in their own work dir and prefix. A microVM has no raw
// exec (its commands go through the agent): that row has no ratio. Pause includes the fsync of the
// image in both columns' durable variant (see the `pause` rows).
// What metering adds (the usage sampler on against off, same run): bench/lifecycle/metering.mjs.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Sandbox } from '@ramify/sdk';
import { NamespaceNetwork } from '@ramify/network';
import { GvisorRuntime } from '@ramify/runtime-gvisor';
import { MicrovmRuntime, detectAcceleration, prepareGuestKernel, qemuVersion } from '@ramify/runtime-microvm';
import { SqliteStore } from '@ramify/store';
import { MAX_SLOT } from '@ramify/network';

const { values } = parseArgs({ options: { runtime: { type: 'string', default: 'gvisor' }, iterations: { type: 'string', default: '5' }, template: { type: 'string', default: 'base' } } });
const runtimeName = values.runtime;
if (runtimeName !== 'gvisor' && runtimeName !== 'microvm') throw new Error(`--runtime is gvisor or microvm, not '${runtimeName}'`);
const N = Number(values.iterations);
const home = process.env.RAMIFY_HOME ?? '/var/lib/ramify';

const store = new SqliteStore({ path: join(home, 'ramify.db'), maxSlots: MAX_SLOT });
const template = await store.findTemplateByName(values.template);
if (!template) throw new Error(`template '${values.template}' is not built: run 'ramify template build ${values.template}'`);
const templateImage = join(home, 'snapshots', template.images.find((i) => i.runtime === runtimeName)?.snapshotId ?? '-', 'image');
if (!template.images.some((i) => i.runtime === runtimeName)) throw new Error(`template '${values.template}' has no ${runtimeName} image: run 'ramify template build ${values.template} --runtime ${runtimeName}'`);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = async (fn) => { const t = performance.now(); const r = await fn(); return [performance.now() - t, r]; };
/** fsync every file of an image and its directory: what makes a pause durable (snapshot storage does it). */
const syncImage = (dir) => spawnSync('sync', [dir, ...readdirSync(dir).map((f) => join(dir, f))]);

// ---- the raw runtime, same template image ----
const work = await mkdtemp(join(tmpdir(), 'rmf-bench-'));
await writeFile(join(work, 'resolv.conf'), 'nameserver 10.254.0.1\n');
const net = new NamespaceNetwork({ prefix: 'rmbn' });
const runtime = runtimeName === 'gvisor' ? await GvisorRuntime.open({ workDir: work, resolvConfPath: join(work, 'resolv.conf'), cgroupParent: null }) : await openMicrovm();
const raw = { create: [], exec: [], pause: [], pauseDurable: [], resume: [], restore8: [] };
const spec = async (id, slot) => ({ sandboxId: id, rootfsDir: template.rootfsDir, hostname: id, resources: { cpuCount: 1, memoryMB: 512, diskSizeMB: null }, network: await net.attach(id, slot) });

/** The microVM runtime as the daemon opens it (packages/daemon/src/runtimes.ts), in this bench's work dir. */
async function openMicrovm() {
  const cacheDir = join(process.env.RAMIFY_CACHE_DIR ?? '/var/cache/ramify', 'microvm');
  const version = await qemuVersion('qemu-system-x86_64');
  const kernel = await prepareGuestKernel({ cacheDir });
  const acceleration = await detectAcceleration({ kernel, cacheDir, qemuVersion: version });
  return MicrovmRuntime.open({ workDir: work, kernel, acceleration, resolvConfPath: join(work, 'resolv.conf'), qemuVersion: version, cgroupParent: null });
}
try {
  for (let i = 0; i < N; i++) {
    const id = `rmbn-${i}`;
    const [tc, s] = await time(async () => { const s = await spec(id, i + 1); await runtime.restore(s, template ? templateImage : ''); return s; });
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
  }
  // The floor of a fork x8 on this machine: eight raw restores of one image at once, namespaces ready.
  const img = join(work, 'img-0');
  const specs = await Promise.all(Array.from({ length: 8 }, (_, k) => spec(`rmbn-par-${k}`, 20 + k)));
  for (let rep = 0; rep < Math.min(N, 3); rep++) {
    const [t8] = await time(() => Promise.all(specs.map((s) => runtime.restore(s, img))));
    raw.restore8.push(t8);
    await Promise.all(specs.map((s) => runtime.kill(s.sandboxId)));
  }
  await runtime.settle?.();
} finally {
  await net.destroyAll();
  await rm(work, { recursive: true, force: true });
}

// ---- Ramify, through the SDK and the daemon ----
const ours = { create: [], exec: [], pause: [], resume: [], fork3: [], fork8: [] };
for (let i = 0; i < N; i++) {
  const [tc, sbx] = await time(() => Sandbox.create({ template: values.template, runtime: runtimeName, timeoutMs: 600_000 }));
  ours.create.push(tc);
  ours.exec.push((await time(() => sbx.commands.run('true')))[0]);
  ours.pause.push((await time(() => sbx.pause()))[0]);
  ours.resume.push((await time(() => sbx.resume()))[0]);
  if (i < 3) {
    const [t3, f3] = await time(() => sbx.fork({ count: 3 }));
    ours.fork3.push(t3);
    await Promise.all(f3.map((f) => f.kill()));
    const [t8, f8] = await time(() => sbx.fork({ count: 8 }));
    ours.fork8.push(t8);
    await Promise.all(f8.map((f) => f.kill()));
  }
  await sbx.kill();
}

const steps = runtimeName === 'gvisor'
  ? { create: 'netns setup + runsc restore', exec: 'runsc exec bash -c true', pause: 'runsc checkpoint', resume: 'runsc restore (own netns)', one: 'one runsc restore', eight: '8 runsc restores at once (floor on this machine)' }
  : { create: 'netns setup + QEMU restore', exec: '(no raw exec: the agent runs commands)', pause: 'QEMU migration to the image', resume: 'QEMU restore (own netns)', one: 'one QEMU restore', eight: '8 QEMU restores at once (floor on this machine)' };
const rows = [
  ['create', ours.create, raw.create, steps.create, 1.3],
  ['exec', ours.exec, raw.exec, steps.exec, 1.5],
  ['pause', ours.pause, raw.pause, steps.pause, null],
  ['pause', ours.pause, raw.pauseDurable, `${steps.pause} + fsync of the image (what Ramify does)`, 1.3],
  ['resume', ours.resume, raw.resume, steps.resume, null],
  ['fork x3', ours.fork3, raw.resume, steps.one, null],
  ['fork x8', ours.fork8, raw.resume, steps.one, 3],
  ['fork x8', ours.fork8, raw.restore8, steps.eight, null],
];
console.log(`bench/lifecycle: ${runtimeName} (${runtime.summary ?? runtime.name}), ${N} iterations (fork: ${ours.fork3.length}), template '${values.template}', medians in ms`);
console.log(['operation', 'ramify', 'raw', 'ratio', 'target', 'raw step'].join('\t'));
for (const [name, o, r, what, target] of rows) {
  if (r.length === 0) {
    console.log([name, median(o).toFixed(1), '-', '-', '-', what].join('\t'));
    continue;
  }
  const ratio = median(o) / median(r);
  console.log([name, median(o).toFixed(1), median(r).toFixed(1), `${ratio.toFixed(2)}x`, target ? `<= ${target}x ${ratio <= target ? 'ok' : 'MISSED'}` : '-', what].join('\t'));
}
