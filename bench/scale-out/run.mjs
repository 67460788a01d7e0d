#!/usr/bin/env node
// bench/scale-out: snapshot storage on S3 (issue 16), each figure beside the raw mechanism in the same run.
// Its own gVisor daemon (prefix rmsb) with S3 snapshot storage on a real S3-compatible server (s3rver on
// 127.0.0.1, the AWS SDK unchanged), the base template registered; a sandbox holding --fill-mb of random
// bytes in memory (/dev/shm) and a counter process.
//   node bench/scale-out/run.mjs [--iterations 3] [--fill-mb 64] [--forks 8] [--keep-images DIR]
// Prints, each with its target and ok/MISSED:
// - upload time after pause: from the pause's answer until the image is durable (manifest in the bucket),
//   against the raw PutObject of the same bytes as whole objects;
// - the S3 server's raw download throughput: GetObject of the same bytes;
// - cold-cache resume (local copy evicted, downloaded and checked) against the same host's warm resume.
//   There is one host here: a cold-cache resume on the same host stands in for a resume on another
//   host (what a cross-host resume adds is the download, the same). Target: cold <= warm + image bytes
//   / raw throughput x 1.3;
// - bytes stored for a parent and its --forks forks (each paused once) against (1 + forks) x one image.
// --keep-images DIR copies the parent's and the forks' images there (for bench/scale-out/chunking.mjs).
// As root; needs the packages built.
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { cp, mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cutPoint, DEFAULT_CHUNKING } from '../../packages/storage/dist/index.js';
import { startLocalS3Server, S3RVER_CREDENTIALS } from '../../packages/storage/dist/testsuite/index.js';
import { startBenchDaemon } from '../support/in-process-daemon.mjs';
import { ok, time, upperMedian } from '../support/stats.mjs';

const { values } = parseArgs({ options: { iterations: { type: 'string', default: '3' }, 'fill-mb': { type: 'string', default: '64' }, forks: { type: 'string', default: '8' }, 'keep-images': { type: 'string' } } });
const N = Number(values.iterations);
const fillMB = Number(values['fill-mb']);
const forks = Number(values.forks);
const MB = 1e6;

const s3 = await startLocalS3Server({ bucket: 'ramify-bench' });
const { server, call, stop } = await startBenchDaemon({
  prefix: 'rmsb', name: 'scale-out',
  options: { snapshotStorage: { s3Endpoint: s3.endpoint, s3Bucket: 'ramify-bench', s3PathStyle: true, s3Credentials: { ...S3RVER_CREDENTIALS } } },
});
const storage = server.core.storage;
const store = storage.store;

async function must(method, path, body) {
  const r = await call(method, path, body);
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}
/** Bytes the upload of `snapshotId` added to the bucket (chunks it stored + its manifest), from its durable marker. */
async function storedBy(snapshotId) {
  return JSON.parse(await readFile(join(storage.local.rootDir, 'snapshots', snapshotId, 'durable.json'), 'utf8')).storedBytes;
}
/** A running sandbox holding `fillMB` of random bytes in memory and a counter. */
async function filledSandbox() {
  const { id } = await must('POST', '/v1/sandboxes', { timeoutMs: 3_600_000, memoryMB: 512 });
  await must('POST', `/v1/sandboxes/${id}/commands`, { cmd: `head -c ${fillMB}M /dev/urandom > /dev/shm/fill` });
  await must('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'i=0; while true; do i=$((i+1)); echo $i > /tmp/count; sleep 0.1; done', background: true });
  return id;
}
const pausedSnapshot = async (id) => (await server.core.store.getSandbox(id)).pausedSnapshotId;
/** Poll until `snapshotId` is durable; ms from `since` (performance.now()). */
async function durableAfter(snapshotId, since) {
  for (;;) {
    if ((await storage.uploadState(snapshotId)).state === 'durable') return performance.now() - since;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
/** Pause `id`; returns its image id, the pause's ms and the ms from the pause's answer until durable. */
async function pauseDurable(id) {
  const [pauseMs] = await time(() => must('POST', `/v1/sandboxes/${id}/pause`));
  const answered = performance.now();
  const snapshotId = await pausedSnapshot(id);
  return { snapshotId, pauseMs, uploadMs: await durableAfter(snapshotId, answered) };
}

try {
  // ---- upload after pause, warm and cold resume ----
  const rows = { pause: [], upload: [], warm: [], cold: [], imageBytes: [] };
  const id = await filledSandbox();
  let files = [];
  for (let i = 0; i < N; i++) {
    const a = await pauseDurable(id);
    rows.pause.push(a.pauseMs);
    rows.upload.push(a.uploadMs);
    rows.warm.push((await time(() => must('POST', `/v1/sandboxes/${id}/resume`)))[0]);
    const b = await pauseDurable(id);
    rows.upload.push(b.uploadMs);
    const { imageDir, manifest } = await storage.local.open(b.snapshotId, { verify: 'none' });
    rows.imageBytes.push(manifest.sizeBytes);
    files = await Promise.all(Object.keys(manifest.files).map(async (name) => [name, await readFile(join(imageDir, name))]));
    await storage.local.remove(b.snapshotId); // evicted: the resume downloads it
    rows.cold.push((await time(() => must('POST', `/v1/sandboxes/${id}/resume`)))[0]);
  }
  // ---- the raw mechanism: the last image's files as whole objects, PUT then GET ----
  const rawBytes = files.reduce((sum, [, data]) => sum + data.length, 0);
  const rawPut = [];
  const rawGet = [];
  for (let i = 0; i < N; i++) {
    rawPut.push((await time(() => Promise.all(files.map(([name, data]) => store.client.send(new PutObjectCommand({ Bucket: 'ramify-bench', Key: `raw/${i}/${name}`, Body: data }))))))[0]);
    rawGet.push((await time(() => Promise.all(files.map(async ([name]) => {
      const got = await store.client.send(new GetObjectCommand({ Bucket: 'ramify-bench', Key: `raw/${i}/${name}` }));
      let n = 0;
      for await (const chunk of got.Body) n += chunk.length;
      return n;
    }))))[0]);
  }
  const rawMBps = rawBytes / MB / (upperMedian(rawGet) / 1000);
  // The floor of any chunked upload: the same bytes cut the storage's way, each chunk one PutObject, 8 at once.
  const chunks = [];
  for (const [, data] of files) for (let rest = data; rest.length > 0; rest = rest.subarray(chunks.at(-1).length)) chunks.push(rest.subarray(0, cutPoint(rest, DEFAULT_CHUNKING)));
  const rawChunkPut = [];
  for (let i = 0; i < N; i++) {
    let next = 0;
    rawChunkPut.push((await time(() => Promise.all(Array.from({ length: 8 }, async () => {
      while (next < chunks.length) {
        const k = next++;
        await store.client.send(new PutObjectCommand({ Bucket: 'ramify-bench', Key: `raw-chunks/${i}/${k}`, Body: chunks[k] }));
      }
    }))))[0]);
  }
  await must('DELETE', `/v1/sandboxes/${id}`);

  // ---- dedup: a parent and its forks, each paused once ----
  const parentId = await filledSandbox();
  const parent = await pauseDurable(parentId);
  const parentBytes = (await storage.local.open(parent.snapshotId, { verify: 'none' })).manifest.sizeBytes;
  const children = (await must('POST', `/v1/sandboxes/${parentId}/fork`, { count: forks })).sandboxes.map((s) => s.id);
  const forkImages = [];
  for (const child of children) forkImages.push((await pauseDurable(child)).snapshotId);
  let stored = await storedBy(parent.snapshotId);
  for (const snapshotId of forkImages) stored += await storedBy(snapshotId);
  const nineImages = (1 + forks) * parentBytes;
  if (values['keep-images']) {
    for (const [name, snapshotId] of [['parent', parent.snapshotId], ...forkImages.map((s, k) => [`fork-${k + 1}`, s])]) {
      await mkdir(join(values['keep-images'], name), { recursive: true });
      await cp((await storage.local.open(snapshotId, { verify: 'none' })).imageDir, join(values['keep-images'], name), { recursive: true });
    }
  }

  const image = upperMedian(rows.imageBytes);
  const warm = upperMedian(rows.warm);
  const cold = upperMedian(rows.cold);
  const coldTarget = warm + (image / MB / rawMBps) * 1000 * 1.3;
  const upload = upperMedian(rows.upload);
  const put = upperMedian(rawPut);
  console.log(`bench/scale-out: gVisor, s3rver on 127.0.0.1 (${s3.endpoint}), ${N} iterations, a 512 MiB sandbox holding ${fillMB} MB of random bytes in memory; medians`);
  console.log(`image: ${(image / MB).toFixed(1)} MB (runsc's checkpoint as the gVisor runtime writes it: -compression none, pages.img beside checkpoint.img); load average ${(await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ')}`);
  console.log(['figure', 'value', 'raw', 'target', '', 'what'].join('\t'));
  console.log(['upload after pause', `${upload.toFixed(0)} ms`, `${put.toFixed(0)} ms`, `<= 2x raw (${(upload / put).toFixed(2)}x)`, ok(upload, 2 * put), 'pause answered -> manifest in the bucket (chunk, hash, compress, PUT) vs raw PutObject of the same files as whole objects'].join('\t'));
  console.log(['  raw chunked PUT', `${upperMedian(rawChunkPut).toFixed(0)} ms`, '-', '-', '-', `the same bytes as ${chunks.length} content-defined chunks, one PutObject each, 8 at once: the server's cost per object, which any chunked upload pays`].join('\t'));
  console.log(['raw download', `${rawMBps.toFixed(0)} MB/s`, '-', '-', '-', `s3rver GetObject of the same ${(rawBytes / MB).toFixed(1)} MB as whole objects`].join('\t'));
  console.log(['resume, warm cache', `${warm.toFixed(0)} ms`, '-', '-', '-', 'the image on local disk (same host)'].join('\t'));
  console.log(['resume, cold cache', `${cold.toFixed(0)} ms`, '-', `<= ${coldTarget.toFixed(0)} ms`, ok(cold, coldTarget), 'local copy evicted: downloaded, checked (sha256 per chunk as it arrives), restored. Stands in for a resume on another host (one host here): target warm + image / raw throughput x 1.3'].join('\t'));
  console.log(['pause', `${upperMedian(rows.pause).toFixed(0)} ms`, '-', '-', '-', 'acknowledged once the image is safe on local disk (the upload follows)'].join('\t'));
  console.log(['bytes stored, parent + forks', `${(stored / MB).toFixed(1)} MB`, `${(nineImages / MB).toFixed(1)} MB`, `<= 0.5x (${(stored / nineImages).toFixed(2)}x)`, ok(stored, 0.5 * nineImages), `a parent and ${forks} forks each paused once, against ${1 + forks} x the parent's image (${(parentBytes / MB).toFixed(1)} MB): the dedup ratio`].join('\t'));
} finally {
  await stop();
  await s3.close();
}
