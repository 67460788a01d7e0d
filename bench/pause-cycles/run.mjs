#!/usr/bin/env node
// bench/pause-cycles: does pausing one sandbox get slower the more often it is paused? One sandbox (with
// a little memory in use, like a warm interpreter) is paused and resumed `--cycles` times through the
// daemon; next to it, in the same run, a raw `runsc checkpoint` of a sandbox restored from the same
// template image, as often, with the same GvisorRuntime the daemon uses. Prints the median pause of the
// first and last 5 cycles of each and the drift (last / first); target: Ramify's drift within ±15 %.
//   node bench/pause-cycles/run.mjs [--cycles 30] [--template base]
// Needs a running `ramify serve` (bash scripts/setup.sh starts one) and root.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Sandbox } from '@ramify/sdk';
import { MAX_SLOT, NamespaceNetwork } from '@ramify/network';
import { GvisorRuntime } from '@ramify/runtime-gvisor';
import { SqliteStore } from '@ramify/store';

const { values } = parseArgs({ options: { cycles: { type: 'string', default: '30' }, template: { type: 'string', default: 'base' } } });
const cycles = Number(values.cycles);
const home = process.env.RAMIFY_HOME ?? '/var/lib/ramify';
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = async (fn) => { const t = performance.now(); await fn(); return performance.now() - t; };
const drift = (xs) => median(xs.slice(-5)) / median(xs.slice(0, 5));

// ---- Ramify ----
const sbx = await Sandbox.create({ template: values.template, timeoutMs: 3_600_000 });
const ours = [];
try {
  await sbx.commands.run("python3 -c 'import time; a = bytearray(64 << 20); time.sleep(86400)'", { background: true });
  for (let i = 0; i < cycles; i++) {
    ours.push(await time(() => sbx.pause()));
    await sbx.resume();
  }
} finally {
  await sbx.kill();
}

// ---- raw runsc, same template image ----
const store = new SqliteStore({ path: join(home, 'ramify.db'), maxSlots: MAX_SLOT });
const template = await store.findTemplateByName(values.template);
const image = join(home, 'snapshots', template.images.find((i) => i.runtime === 'gvisor').snapshotId, 'image');
const work = await mkdtemp(join(tmpdir(), 'rmf-bench-cycles-'));
await writeFile(join(work, 'resolv.conf'), 'nameserver 10.254.0.1\n');
const net = new NamespaceNetwork({ prefix: 'rmbc' });
const runtime = await GvisorRuntime.open({ workDir: work, resolvConfPath: join(work, 'resolv.conf'), cgroupParent: null });
const raw = [];
try {
  const spec = async () => ({ sandboxId: 'rmbc-1', rootfsDir: template.rootfsDir, hostname: 'rmbc-1', resources: { cpuCount: 1, memoryMB: 512 }, network: await net.attach('rmbc-1', 1) });
  let from = image;
  for (let i = 0; i < cycles; i++) {
    await runtime.restore(await spec(), from);
    from = join(work, `img-${i}`);
    raw.push(await time(() => runtime.checkpoint('rmbc-1', from)));
  }
  await runtime.settle();
} finally {
  await net.destroyAll();
  await rm(work, { recursive: true, force: true });
}

console.log(`bench/pause-cycles: ${cycles} pause/resume cycles of one sandbox, template '${values.template}', medians in ms`);
console.log(['what', 'first 5', 'last 5', 'drift', 'target'].join('\t'));
for (const [name, xs, target] of [['ramify pause', ours, 0.15], ['raw runsc checkpoint', raw, null]]) {
  const d = drift(xs);
  const verdict = target === null ? '-' : `±${target * 100}% ${Math.abs(d - 1) <= target ? 'ok' : 'MISSED'}`;
  console.log([name, median(xs.slice(0, 5)).toFixed(1), median(xs.slice(-5)).toFixed(1), `${d.toFixed(2)}x`, verdict].join('\t'));
}
console.log(`every pause (ms): ${ours.map((x) => x.toFixed(0)).join(' ')}`);
