#!/usr/bin/env node
// The raw mechanism of a cross-host resume's download: GetObject of whole objects, all at once, from
// inside a host's network namespace (bench/scale-out/cross-host.mjs runs it there, so the bytes cross the
// same veth and bridge as the host's own download).
//   node raw-download.mjs ENDPOINT BUCKET KEY...   (credentials: RAMIFY_S3_ACCESS_KEY_ID / _SECRET_ACCESS_KEY)
// Prints {"ms": <wall time>, "bytes": <bytes read>} on stdout.
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { createS3Client } from '../../packages/storage/dist/index.js';

const [endpoint, bucket, ...keys] = process.argv.slice(2);
const client = createS3Client({
  endpoint, bucket, region: 'us-east-1', forcePathStyle: true,
  credentials: { accessKeyId: process.env.RAMIFY_S3_ACCESS_KEY_ID, secretAccessKey: process.env.RAMIFY_S3_SECRET_ACCESS_KEY },
});
const started = performance.now();
const sizes = await Promise.all(keys.map(async (key) => {
  const got = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  let n = 0;
  for await (const chunk of got.Body) n += chunk.length;
  return n;
}));
process.stdout.write(`${JSON.stringify({ ms: performance.now() - started, bytes: sizes.reduce((a, b) => a + b, 0) })}\n`);
