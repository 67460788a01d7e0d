#!/usr/bin/env node
// bench/scale-out/download.mjs: the download half of a cross-host resume (issue 16), without runsc or a
// cluster: a --size-mb image of random bytes is committed and uploaded by one TieredSnapshotStorage
// (host A's cache), then opened by a second one on an empty cache (host B), against the raw mechanism
// in the same run: GetObject of the same bytes as one whole object, and GetObject of every chunk of
// the image (16 at once, nothing checked or written). s3rver on 127.0.0.1 (as the cluster's). Medians.
//   node bench/scale-out/download.mjs [--iterations 5] [--size-mb 72] [--parallelism 16] [--in-thread]
// Targets: open (download, check, write) <= 1.3x the raw whole-object GET (the cross-host bench's
// yardstick), and <= 1.3x the raw GETs of the same chunk objects (what Ramify's own code adds).
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { S3ChunkStore, TieredSnapshotStorage, parseRemoteManifest } from '../../packages/storage/dist/index.js';
import { startLocalS3Server, waitDurable } from '../../packages/storage/dist/testsuite/index.js';
import { ratioTarget, timeMs, upperMedian } from '../support/stats.mjs';

const { values } = parseArgs({ options: { iterations: { type: 'string', default: '5' }, 'size-mb': { type: 'string', default: '72' }, parallelism: { type: 'string', default: '16' }, 'in-thread': { type: 'boolean', default: false } } });
const N = Number(values.iterations);
const size = Number(values['size-mb']) * 1e6;
const TARGET = 1.3;
const drain = async (body) => { let n = 0; for await (const c of body) n += c.length; return n; };

const s3 = await startLocalS3Server();
const work = await mkdtemp(join(tmpdir(), 'ramify-bench-download-'));
const rows = { open: [], whole: [], chunks: [] };
try {
  const store = () => new S3ChunkStore(s3.connection('bench/'));
  const logger = { debug: () => undefined, info: () => undefined, warn: (m, f) => console.error(m, f), error: (m, f) => console.error(m, f), child: () => logger };
  const a = new TieredSnapshotStorage({ rootDir: join(work, 'a'), store: store(), logger });
  await a.start();
  const raw = store();
  // Host B: one storage for every iteration, as in a long-running host (its download thread started at
  // start: --in-thread downloads on the main thread instead); its cached copy is evicted before each open.
  const b = new TieredSnapshotStorage({ rootDir: join(work, 'b'), store: store(), parallelism: Number(values.parallelism), downloadThreads: !values['in-thread'] });
  await b.start();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  for (let i = 0; i < N; i++) {
    const snapshotId = `snap_bench${i}`;
    const { imageDir } = await a.prepare(snapshotId);
    const bytes = randomBytes(size);
    await mkdir(imageDir, { recursive: true });
    await writeFile(join(imageDir, 'checkpoint.img'), bytes);
    await a.commit({ snapshotId, runtime: 'gvisor', templateId: 'tpl_bench', parentSnapshotId: null });
    await waitDurable(a, snapshotId, 120_000);
    await raw.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: `raw/${i}`, Body: bytes }));
    const manifest = parseRemoteManifest(await raw.getManifest(snapshotId), snapshotId);
    const keys = Object.values(manifest.files).flatMap((f) => f.chunks.map((c) => raw.chunkKey(c.sha256)));

    rows.open.push(await timeMs(() => b.open(snapshotId)));
    await b.local.remove(snapshotId);
    rows.whole.push(await timeMs(async () => drain((await raw.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `raw/${i}` }))).Body)));
    rows.chunks.push(await timeMs(async () => {
      let next = 0;
      await Promise.all(Array.from({ length: 16 }, async () => {
        while (next < keys.length) await drain((await raw.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: keys[next++] }))).Body);
      }));
    }));
  }
  const whole = upperMedian(rows.whole);
  const chunks = upperMedian(rows.chunks);
  const open = upperMedian(rows.open);
  const verdict = (ratio) => ratioTarget(ratio, TARGET);
  console.log(`bench/scale-out/download: ${(size / 1e6).toFixed(0)} MB of random bytes, s3rver on 127.0.0.1, ${N} iterations, medians; load average ${(await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ')}`);
  console.log(['figure', 'ms', 'MB/s', 'against whole', 'target', 'against chunks', 'target'].join('\t'));
  console.log(['raw GET, one whole object', whole.toFixed(0), (size / 1e3 / whole).toFixed(0), '1.00x', '-', '-', '-'].join('\t'));
  console.log(['raw GETs of the chunk objects, 16 at once', chunks.toFixed(0), (size / 1e3 / chunks).toFixed(0), `${(chunks / whole).toFixed(2)}x`, '-', '1.00x', '-'].join('\t'));
  console.log(['open on an empty cache (download, check, write)', open.toFixed(0), (size / 1e3 / open).toFixed(0), `${(open / whole).toFixed(2)}x`, verdict(open / whole), `${(open / chunks).toFixed(2)}x`, verdict(open / chunks)].join('\t'));
  await a.close();
  await b.close();
} finally {
  await s3.close();
  await rm(work, { recursive: true, force: true });
}
