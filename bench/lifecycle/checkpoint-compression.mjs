#!/usr/bin/env node
// bench/lifecycle/checkpoint-compression.mjs: raw `runsc checkpoint -compression none` against runsc's
// default `flate-best-speed`, and the restore of each image, in one run (docs/design/RUNTIME-GVISOR.md,
// "Image compression"). Its own daemon (prefix rmce) only provides the `base` template image; each
// iteration restores it with the gVisor runtime, writes --fill-mb of random bytes in the sandbox, then
// checkpoints with runsc directly (+ sync) and restores the image. Modes alternate per iteration.
// Prints medians of checkpoint, restore and image size per mode, and none/flate. No target: it says
// which mode the runtime should use.
//   flock /tmp/ramify-real-tests.lock node bench/lifecycle/checkpoint-compression.mjs [--iterations 6] [--fill-mb 50]
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { MAX_SLOT, NamespaceNetwork } from '@ramify/network';
import { GvisorRuntime } from '@ramify/runtime-gvisor';
import { SqliteStore } from '@ramify/store';
import { startDaemonChild } from '../support/daemon-child.mjs';
import { time, upperMedian } from '../support/stats.mjs';

const { values } = parseArgs({ options: { iterations: { type: 'string', default: '6' }, 'fill-mb': { type: 'string', default: '50' } } });
const N = Number(values.iterations);
const daemon = await startDaemonChild('rmce', { runtimes: ['gvisor'], warmPool: 'off' });
const work = await mkdtemp(join(tmpdir(), 'rmf-ce-'));
const net = new NamespaceNetwork({ prefix: 'rmcn' });
const runtime = await GvisorRuntime.open({ workDir: work, resolvConfPath: join(work, 'resolv.conf'), cgroupParent: null });
try {
  await writeFile(join(work, 'resolv.conf'), 'nameserver 10.254.0.1\n');
  const store = new SqliteStore({ path: join(daemon.dataDir, 'ramify.db'), maxSlots: MAX_SLOT });
  const template = await store.findTemplateByName('base', 'default');
  if (!template) throw new Error('the daemon has no base template');
  const templateImage = join(daemon.dataDir, 'snapshots', template.images.find((i) => i.runtime === 'gvisor').snapshotId, 'image');
  const spec = async (id) => ({ sandboxId: id, rootfsDir: template.rootfsDir, hostname: id, resources: { cpuCount: 1, memoryMB: 512, diskSizeMB: null }, network: await net.attach(id, 1) });
  const runsc = (netns, args) => spawnSync('nsenter', [`--net=${netns}`, 'runsc', '--root', join(work, 'state'), ...args]);
  const sizeOf = (dir) => readdirSync(dir).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
  const rows = { 'flate-best-speed': { checkpoint: [], restore: [], mb: [] }, none: { checkpoint: [], restore: [], mb: [] } };
  for (let i = 0; i < N; i++) {
    for (const mode of i % 2 ? ['none', 'flate-best-speed'] : ['flate-best-speed', 'none']) {
      const id = `rmce-${i}-${mode === 'none' ? 'n' : 'f'}`;
      const s = await spec(id);
      await runtime.restore(s, templateImage);
      const containerId = await runtime.containerOf(id);
      runsc(s.network.netnsPath, ['exec', containerId, '/bin/bash', '-c', `head -c ${values['fill-mb']}M /dev/urandom > /tmp/fill`]);
      const img = join(work, `img-${id}`);
      const [checkpointMs, r] = await time(async () => {
        const r = runsc(s.network.netnsPath, ['checkpoint', '-compression', mode, '-image-path', img, containerId]);
        spawnSync('sync');
        return r;
      });
      if (r.status !== 0) throw new Error(`runsc checkpoint: ${r.stderr}`);
      rows[mode].checkpoint.push(checkpointMs);
      rows[mode].mb.push(sizeOf(img) / 1e6);
      await runtime.kill(id);
      // The runtime's release stamp, as its own checkpoints write it (the image is this runsc's).
      spawnSync('cp', [join(templateImage, 'ramify-runsc.json'), img]);
      const [restoreMs] = await time(async () => runtime.restore(await spec(id), img));
      rows[mode].restore.push(restoreMs);
      await runtime.kill(id);
      await rm(img, { recursive: true, force: true });
    }
  }
  console.log(`bench/lifecycle/checkpoint-compression: raw runsc, base template + ${values['fill-mb']} MB random, ${N} iterations, medians; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(['mode', 'checkpoint+sync ms', 'restore ms', 'image MB'].join('\t'));
  for (const [mode, r] of Object.entries(rows)) console.log([mode, upperMedian(r.checkpoint).toFixed(0), upperMedian(r.restore).toFixed(0), upperMedian(r.mb).toFixed(1)].join('\t'));
  const ratio = (k) => (upperMedian(rows.none[k]) / upperMedian(rows['flate-best-speed'][k])).toFixed(2);
  console.log(['none/flate', `${ratio('checkpoint')}x`, `${ratio('restore')}x`, `${ratio('mb')}x`].join('\t'));
} finally {
  await net.destroyAll();
  await rm(work, { recursive: true, force: true });
  await daemon.stop();
}
