/**
 * Connecting to an S3-compatible bucket (AWS S3, Cloudflare R2, MinIO, s3rver) with the AWS SDK, and
 * the start-up check that turns the SDK's failures into one message naming what failed and how to fix it.
 */
import { DeleteObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { RamifyError } from '@ramify/contracts';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

export interface S3ConnectionOptions {
  /** Endpoint URL (`https://<account>.r2.cloudflarestorage.com`, `http://127.0.0.1:9000`); absent: AWS's for `region`. */
  endpoint?: string;
  /** Region, e.g. `us-east-1` (R2: `auto`). */
  region: string;
  bucket: string;
  /** Key prefix inside the bucket (e.g. `ramify/`); default none. Several deployments can share one bucket under distinct prefixes. */
  prefix?: string;
  /** Path-style URLs (`endpoint/bucket/key`): MinIO and s3rver need them; AWS and R2 take either. Default false. */
  forcePathStyle?: boolean;
  /** Static credentials; absent: the SDK's default chain (environment, shared config, instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** Attempts per request, the SDK's own retries with backoff included; default 3. */
  maxAttempts?: number;
}

/**
 * An SDK client for `options`. Checksums are computed and validated only where the S3 API requires
 * them: servers other than AWS's (s3rver, older MinIO and Ceph) reject or mangle the SDK's default
 * streaming CRC32 trailers, and every chunk Ramify stores is checked end to end by its sha256 anyway.
 */
export function createS3Client(options: S3ConnectionOptions): S3Client {
  // The SDK prints a 7-line warning per thread that its releases after January 2027 need Node >= 22: in
  // every host's log and test output. The README says which Node Ramify needs and why that matters.
  process.env['AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED'] ??= 'true';
  return new S3Client({
    region: options.region,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    forcePathStyle: options.forcePathStyle ?? false,
    ...(options.credentials ? { credentials: options.credentials } : {}),
    maxAttempts: options.maxAttempts ?? 3,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/**
 * Object key of a new probe (the start-up check, download warm-ups): `<prefix>probes/<name><host>-<random>`,
 * never taken for a chunk or a manifest, and distinct per host and call.
 */
export function probeKey(options: Pick<S3ConnectionOptions, 'prefix'>, name: string): string {
  return `${options.prefix ?? ''}probes/${name}${hostname()}-${randomBytes(6).toString('hex')}`;
}

/** Where a bucket is, for messages: `s3://bucket/prefix at endpoint (region r)`. */
export function describeBucket(options: S3ConnectionOptions): string {
  return `s3://${options.bucket}/${options.prefix ?? ''} at ${options.endpoint ?? 'AWS'} (region ${options.region})`;
}

/**
 * Check at start that the bucket can be listed, written and deleted from with these credentials, so
 * that a misconfiguration fails `ramify serve` at once instead of every upload later. Writes and
 * deletes one small probe object under `<prefix>probes/`.
 * @throws RamifyError `STORAGE_UNAVAILABLE` naming the step that failed, the S3 error, and the fix.
 */
export async function checkS3Access(client: S3Client, options: S3ConnectionOptions): Promise<void> {
  const prefix = options.prefix ?? '';
  const probe = probeKey(options, '');
  await step('list the bucket', options, () => client.send(new ListObjectsV2Command({ Bucket: options.bucket, Prefix: prefix, MaxKeys: 1 })));
  await step('write an object', options, () => client.send(new PutObjectCommand({ Bucket: options.bucket, Key: probe, Body: 'ramify access probe\n' })));
  await step('delete an object', options, () => client.send(new DeleteObjectCommand({ Bucket: options.bucket, Key: probe })));
}

async function step(what: string, options: S3ConnectionOptions, call: () => Promise<unknown>): Promise<void> {
  try {
    await call();
  } catch (error) {
    throw s3Unavailable(`could not ${what}`, options, error);
  }
}

/**
 * A `STORAGE_UNAVAILABLE` error for a failed S3 call: what was tried, where, the S3 error code, and
 * what to change. `details`: `bucket`, `endpoint`, `s3Code`, `httpStatus`.
 */
export function s3Unavailable(what: string, options: S3ConnectionOptions, error: unknown): RamifyError {
  const { code, status, message } = s3ErrorOf(error);
  return new RamifyError(
    'STORAGE_UNAVAILABLE',
    `snapshot storage ${describeBucket(options)}: ${what}: ${code}${status ? ` (HTTP ${status})` : ''}${message && message !== code ? `: ${message}` : ''}; ${fixFor(code, status)}`,
    { bucket: options.bucket, endpoint: options.endpoint ?? null, s3Code: code, httpStatus: status ?? null },
  );
}

/** The S3 error code (`NoSuchBucket`, `InvalidAccessKeyId`, `ECONNREFUSED`, ...), HTTP status and message of an SDK failure. */
export function s3ErrorOf(error: unknown): { code: string; status: number | undefined; message: string } {
  const e = error as { name?: string; Code?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number }; cause?: { code?: string } };
  const status = e?.$metadata?.httpStatusCode;
  // A HEAD answer has no body, so the SDK names its error by status only ("NotFound", "Unknown").
  const named = e?.Code ?? (e?.name && e.name !== 'Error' && e.name !== 'Unknown' ? e.name : undefined);
  const code = e?.code ?? e?.cause?.code ?? named ?? (status === 403 ? 'AccessDenied' : status === 404 ? 'NotFound' : 'Error');
  const message = e?.message === 'UnknownError' ? '' : (e?.message ?? String(error));
  return { code, status, message };
}

function fixFor(code: string, status: number | undefined): string {
  if (code === 'InvalidAccessKeyId' || code === 'SignatureDoesNotMatch' || code === 'InvalidToken' || code === 'ExpiredToken' || code === 'CredentialsProviderError') {
    return 'check RAMIFY_S3_ACCESS_KEY_ID and RAMIFY_S3_SECRET_ACCESS_KEY (and --s3-region: a wrong region also breaks signatures)';
  }
  if (code === 'NoSuchBucket' || (code === 'NotFound' && status === 404)) return 'create the bucket or fix --s3-bucket / RAMIFY_S3_BUCKET';
  if (code === 'AccessDenied' || status === 403) return 'grant these credentials s3:ListBucket, s3:GetObject, s3:PutObject and s3:DeleteObject on the bucket';
  if (code === 'PermanentRedirect' || code === 'AuthorizationHeaderMalformed' || status === 301) return 'set --s3-region to the bucket\'s region';
  if (/^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET|EHOSTUNREACH|TimeoutError)$/.test(code)) return 'check --s3-endpoint / RAMIFY_S3_ENDPOINT and that the server is up';
  return 'check the --s3-* settings (endpoint, region, bucket, --s3-path-style for MinIO and s3rver)';
}
