#!/usr/bin/env node
// bench/scale-out/chunking: which chunking dedups real images better. Reads image directories (e.g. a
// parent and its forks kept by `run.mjs --keep-images DIR`), chunks every file with fixed-size chunks
// and with content-defined chunks (the storage's FastCDC, `packages/storage/src/tiered/chunker.ts`) at
// several sizes, and prints the bytes each would store once against the bytes of all images.
//   node bench/scale-out/chunking.mjs DIR        (every subdirectory of DIR is one image)
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cutPoint } from '../../packages/storage/dist/index.js';

const dir = process.argv[2];
if (!dir) throw new Error('usage: chunking.mjs DIR (one subdirectory per image)');

/** The storage's own content-defined chunker (`cutPoint`), average `avg` bytes (min avg/4, max `max`, default 4 avg). */
function* cdc(data, avg, max = avg * 4) {
  const params = { minBytes: avg / 4, avgBytes: avg, maxBytes: max };
  for (let rest = data; rest.length > 0; ) {
    const n = cutPoint(rest, params);
    yield rest.subarray(0, n);
    rest = rest.subarray(n);
  }
}

function* fixed(data, size) {
  for (let offset = 0; offset < data.length; offset += size) yield data.subarray(offset, offset + size);
}

const images = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name).sort();
const files = [];
for (const image of images) for (const name of await readdir(join(dir, image))) files.push(await readFile(join(dir, image, name)));
const total = files.reduce((sum, data) => sum + data.length, 0);
console.log(`bench/scale-out/chunking: ${images.length} images (${images.join(', ')}), ${(total / 1e6).toFixed(1)} MB in all`);
console.log(['chunking', 'stored once', 'of all', 'chunks'].join('\t'));
for (const [name, split] of [
  ['fixed 4 MiB', (d) => fixed(d, 4 << 20)],
  ['fixed 1 MiB', (d) => fixed(d, 1 << 20)],
  ['fixed 64 KiB', (d) => fixed(d, 64 << 10)],
  ['CDC avg 4 MiB', (d) => cdc(d, 4 << 20)],
  ['CDC avg 2 MiB (the storage)', (d) => cdc(d, 2 << 20)],
  ['CDC avg 2 MiB, max 4 MiB', (d) => cdc(d, 2 << 20, 4 << 20)],
  ['CDC avg 1 MiB', (d) => cdc(d, 1 << 20)],
  ['CDC avg 256 KiB', (d) => cdc(d, 256 << 10)],
  ['CDC avg 64 KiB', (d) => cdc(d, 64 << 10)],
]) {
  const seen = new Map();
  let chunks = 0;
  for (const data of files) {
    for (const chunk of split(data)) {
      chunks++;
      seen.set(createHash('sha256').update(chunk).digest('hex'), chunk.length);
    }
  }
  const unique = [...seen.values()].reduce((a, b) => a + b, 0);
  console.log([name, `${(unique / 1e6).toFixed(1)} MB`, `${((unique / total) * 100).toFixed(1)} %`, `${seen.size} unique of ${chunks}`].join('\t'));
}
