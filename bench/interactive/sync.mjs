#!/usr/bin/env node
// bench/interactive, section `sync` (issue 11 target in brackets): sync latency in one gVisor sandbox,
//   local write → visible in the sandbox through `syncDir` (chokidar sees the write, a pass packs it, one
//   files.write of the tar and one guarded tar command put it in place) [sync p50 <= 1 s], against, in
//   the same run, the same bytes written and read back straight through the files API (files.write +
//   files.read). "Visible": the sandbox's own watch reports the file and a read of it returns the new
//   bytes; the time is taken when that event arrived. One write at a time (the next once the last was
//   seen), the two measurements alternating which goes first, after 3 warm-up writes.
// bench/interactive/run.mjs runs it as its section `sync` (`--only sync`); alone it starts its own daemon
// in-process (prefix `rwsb`, a temp data dir), as root, and removes everything afterwards. Needs the
// packages built and the base rootfs (as `npm test` builds it). Run it under the real-tests lock:
//   flock /tmp/ramify-real-tests.lock node bench/interactive/sync.mjs [--writes 50] [--bytes 1024]
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Sandbox, syncDir } from '@ramify/sdk';
import { startBenchDaemon } from '../support/in-process-daemon.mjs';
import { nearestRank, ok } from '../support/stats.mjs';

const WARMUP = 3;
const row = (what, times, extra = {}) => ({ section: 'sync', what, n: times.length, p50: nearestRank(times, 0.5), p99: nearestRank(times, 0.99), ...extra });

/**
 * Section `sync`: `writes` local writes of `bytes` each through a sync of a fresh directory into `ctx.sbx`,
 * and as many files.write + files.read of the same size. Returns run.mjs's latency rows.
 */
export async function syncSection(ctx, { writes = 50, bytes = 1024 } = {}) {
  const { sbx } = ctx;
  const local = await mkdtemp(join(tmpdir(), 'ramify-bench-sync-'));
  const session = await syncDir(sbx, local, '/root/bench-sync');
  const waiting = new Map(); // name -> { bytes, resolve }
  let watch;
  try {
    await session.ready;
    watch = await sbx.files.watchDir('/root/bench-sync', async (event) => {
      const at = performance.now();
      const want = waiting.get(event.name);
      if (!want || event.type === 'remove' || event.type === 'rename') return;
      const got = await sbx.files.read(`/root/bench-sync/${event.name}`, { format: 'bytes' }).catch(() => undefined);
      if (got && Buffer.compare(Buffer.from(got), want.bytes) === 0 && waiting.delete(event.name)) want.resolve(at);
    });
    const visible = (name, data) => new Promise((resolve, reject) => {
      waiting.set(name, { bytes: data, resolve });
      setTimeout(() => waiting.delete(name) && reject(new Error(`${name} not visible in the sandbox after 30 s`)), 30_000).unref();
    });
    const viaSync = async (i) => {
      const data = randomBytes(bytes);
      const seen = visible(`w${i}.bin`, data);
      const t = performance.now();
      await writeFile(join(local, `w${i}.bin`), data);
      return (await seen) - t;
    };
    const direct = async (i) => {
      const data = randomBytes(bytes);
      const t = performance.now();
      await sbx.files.write(`/root/bench-direct/d${i}.bin`, data);
      const back = await sbx.files.read(`/root/bench-direct/d${i}.bin`, { format: 'bytes' });
      if (Buffer.compare(Buffer.from(back), data) !== 0) throw new Error('direct read-back differs');
      return performance.now() - t;
    };
    const synced = [];
    const raw = [];
    for (let i = 0; i < writes + WARMUP; i++) {
      let s;
      let d;
      if (i % 2 === 0) {
        s = await viaSync(i);
        d = await direct(i);
      } else {
        d = await direct(i);
        s = await viaSync(i);
      }
      if (i < WARMUP) continue;
      synced.push(s);
      raw.push(d);
    }
    console.log(`sync: ${writes} local writes of ${bytes} bytes, one at a time, each until the sandbox's watch reports it and a read returns its bytes`);
    const baseline = row('raw: files.write + files.read, same bytes', raw);
    return [row('syncDir: local write -> visible in the sandbox', synced, { baseline, target: { p50: 1000 } }), baseline];
  } finally {
    await watch?.stop();
    await session.stop();
    await rm(local, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { writes: { type: 'string', default: '50' }, bytes: { type: 'string', default: '1024' } } });
  const { server, key, stop } = await startBenchDaemon({ prefix: 'rwsb', name: 'sync' });
  try {
    const sbx = await Sandbox.create({ template: 'base', timeoutMs: 3_600_000, apiUrl: server.url, apiKey: key });
    const rows = await syncSection({ sbx }, { writes: Number(values.writes), bytes: Number(values.bytes) });
    for (const r of rows) {
      const ratio = r.baseline ? `   ${(r.p50 / r.baseline.p50).toFixed(1)}x raw` : '';
      const target = r.target ? `   target p50 <= ${r.target.p50} ms: ${ok(r.p50, r.target.p50)}` : '';
      console.log(`  ${r.what.padEnd(48)} n ${r.n}   p50 ${r.p50.toFixed(1)} ms   p99 ${r.p99.toFixed(1)} ms${ratio}${target}`);
    }
  } finally {
    await stop();
  }
}
