#!/usr/bin/env node
// bench/pause-cycles: does pausing one sandbox get slower the more often it is paused? One sandbox (with
// a little memory in use, like a warm interpreter) is paused and resumed `--cycles` times through the
// daemon; alternating with it, a raw `runsc checkpoint` of a sandbox restored from the same template
// image, each cycle from the previous image, with the same GvisorRuntime the daemon uses. Prints the
// median pause of the first and last 5 cycles of each and the drift (last / first); target: Ramify's
// drift within ±15 % of the raw drift measured in the same minutes (this machine's load drifts too).
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
import { timeMs, upperMedian, verdict } from '../support/stats.mjs';

const { values } = parseArgs({ options: { cycles: { type: 'string', default: '30' }, template: { type: 'string', default: 'base' } } });
const cycles = Number(values.cycles);
const home = process.env.RAMIFY_HOME ?? '/var/lib/ramify';
const drift = (xs) => upperMedian(xs.slice(-5)) / upperMedian(xs.slice(0, 5));

// Ramify's cycles and the raw ones alternate, so the machine's noise (other work on it) lands on both:
// the verdict is on Ramify's drift divided by the raw drift of the same minutes.
const store = new SqliteStore({ path: join(home, 'ramify.db'), maxSlots: MAX_SLOT });
const template = await store.findTemplateByName(values.template, 'default');
const image = join(home, 'snapshots', template.images.find((i) => i.runtime === 'gvisor').snapshotId, 'image');
const work = await mkdtemp(join(tmpdir(), 'rmf-bench-cycles-'));
await writeFile(join(work, 'resolv.conf'), 'nameserver 10.254.0.1\n');
const net = new NamespaceNetwork({ prefix: 'rmbc' });
const runtime = await GvisorRuntime.open({ workDir: work, resolvConfPath: join(work, 'resolv.conf'), cgroupParent: null });
const spec = async () => ({ sandboxId: 'rmbc-1', rootfsDir: template.rootfsDir, hostname: 'rmbc-1', resources: { cpuCount: 1, memoryMB: 512, diskSizeMB: null }, network: await net.attach('rmbc-1', 1) });
const sbx = await Sandbox.create({ template: values.template, timeoutMs: 3_600_000 });
const ours = [];
const raw = [];
try {
  await sbx.commands.run("python3 -c 'import time; a = bytearray(64 << 20); time.sleep(86400)'", { background: true });
  let from = image;
  for (let i = 0; i < cycles; i++) {
    ours.push(await timeMs(() => sbx.pause()));
    await sbx.resume();
    await runtime.restore(await spec(), from);
    from = join(work, `img-${i}`);
    raw.push(await timeMs(() => runtime.checkpoint('rmbc-1', from)));
  }
  await runtime.settle();
} finally {
  await sbx.kill();
  await net.destroyAll();
  await rm(work, { recursive: true, force: true });
}

console.log(`bench/pause-cycles: ${cycles} pause/resume cycles of one sandbox, template '${values.template}', medians in ms`);
console.log(['what', 'first 5', 'last 5', 'drift', 'target'].join('\t'));
const relative = drift(ours) / drift(raw);
console.log(['ramify pause', upperMedian(ours.slice(0, 5)).toFixed(1), upperMedian(ours.slice(-5)).toFixed(1), `${drift(ours).toFixed(2)}x`, '-'].join('\t'));
console.log(['raw runsc checkpoint', upperMedian(raw.slice(0, 5)).toFixed(1), upperMedian(raw.slice(-5)).toFixed(1), `${drift(raw).toFixed(2)}x`, '-'].join('\t'));
console.log(['ramify drift / raw drift', '', '', `${relative.toFixed(2)}x`, `±15% ${verdict(Math.abs(relative - 1) <= 0.15)}`].join('\t'));
console.log(`every pause (ms): ${ours.map((x) => x.toFixed(0)).join(' ')}`);
console.log(`every raw checkpoint (ms): ${raw.map((x) => x.toFixed(0)).join(' ')}`);
