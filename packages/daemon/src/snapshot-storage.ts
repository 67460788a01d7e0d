/**
 * Where the daemon keeps snapshots: local disk (default), or S3-compatible storage behind a local
 * cache when a bucket is configured (`ramify serve --s3-bucket`, or `RAMIFY_S3_BUCKET`). Flags win over
 * the environment; credentials come only from the environment (`RAMIFY_S3_ACCESS_KEY_ID`,
 * `RAMIFY_S3_SECRET_ACCESS_KEY`), else the AWS SDK's default chain. See docs/design/STORAGE.md.
 */
import { RamifyError } from '@ramify/contracts';
import type { Logger, SnapshotStorage } from '@ramify/core';
import { checkS3Access, describeBucket, LocalSnapshotStorage, S3ChunkStore, TieredSnapshotStorage, type S3ConnectionOptions } from '@ramify/storage';

/** `ramify serve`'s snapshot storage flags (each overrides its `RAMIFY_*` variable). */
export interface SnapshotStorageFlags {
  /** `--s3-endpoint` / `RAMIFY_S3_ENDPOINT`: URL of an S3-compatible server; absent: AWS. */
  s3Endpoint?: string;
  /** `--s3-bucket` / `RAMIFY_S3_BUCKET`: turns S3 storage on. */
  s3Bucket?: string;
  /** `--s3-region` / `RAMIFY_S3_REGION` (else `AWS_REGION`, else `us-east-1`). */
  s3Region?: string;
  /** `--s3-prefix` / `RAMIFY_S3_PREFIX`: key prefix in the bucket. */
  s3Prefix?: string;
  /** `--s3-path-style` / `RAMIFY_S3_PATH_STYLE=1`: path-style URLs (MinIO, s3rver). */
  s3PathStyle?: boolean;
  /** `--snapshot-cache-bytes` / `RAMIFY_SNAPSHOT_CACHE_BYTES`: local cache budget with S3; default no limit. */
  snapshotCacheBytes?: number;
  /** Credentials given in code (no CLI flag: secrets stay out of argv); else `RAMIFY_S3_ACCESS_KEY_ID` / `RAMIFY_S3_SECRET_ACCESS_KEY`. */
  s3Credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** The snapshot storage the daemon opens. */
export type SnapshotStorageConfig = { kind: 'local' } | { kind: 's3'; connection: S3ConnectionOptions; cacheBudgetBytes: number | null };

/**
 * Resolve flags and environment into a {@link SnapshotStorageConfig}.
 * @throws RamifyError `VALIDATION_FAILED` naming the setting: an endpoint that is not an http(s) URL,
 *   one credential without the other, a cache budget that is not a non-negative integer, or S3
 *   settings without a bucket.
 */
export function resolveSnapshotStorage(flags: SnapshotStorageFlags = {}, env: NodeJS.ProcessEnv = process.env): SnapshotStorageConfig {
  const pick = (flag: string | undefined, name: string): string | undefined => flag ?? (env[name] ? env[name] : undefined);
  const bucket = pick(flags.s3Bucket, 'RAMIFY_S3_BUCKET');
  const endpoint = pick(flags.s3Endpoint, 'RAMIFY_S3_ENDPOINT');
  const cacheText = flags.snapshotCacheBytes !== undefined ? String(flags.snapshotCacheBytes) : pick(undefined, 'RAMIFY_SNAPSHOT_CACHE_BYTES');
  const accessKeyId = pick(flags.s3Credentials?.accessKeyId, 'RAMIFY_S3_ACCESS_KEY_ID');
  const secretAccessKey = pick(flags.s3Credentials?.secretAccessKey, 'RAMIFY_S3_SECRET_ACCESS_KEY');
  if (!bucket) {
    const stray = [endpoint && 'the S3 endpoint', cacheText && 'a snapshot cache budget', accessKeyId && 'S3 credentials'].filter(Boolean);
    if (stray.length > 0) throw invalid(`${stray.join(', ')} given without a bucket: set --s3-bucket or RAMIFY_S3_BUCKET (snapshots stay on local disk without one)`);
    return { kind: 'local' };
  }
  if (endpoint !== undefined && !/^https?:\/\/[^/\s]+/.test(endpoint)) throw invalid(`S3 endpoint '${endpoint}' is not an http(s) URL (e.g. http://127.0.0.1:9000)`);
  if ((accessKeyId === undefined) !== (secretAccessKey === undefined)) throw invalid('RAMIFY_S3_ACCESS_KEY_ID and RAMIFY_S3_SECRET_ACCESS_KEY go together (or leave both unset for the AWS SDK\'s default credentials)');
  let cacheBudgetBytes: number | null = null;
  if (cacheText !== undefined) {
    cacheBudgetBytes = Number(cacheText);
    if (!/^\d+$/.test(cacheText) || !Number.isSafeInteger(cacheBudgetBytes)) throw invalid(`snapshot cache budget '${cacheText}' is not a whole number of bytes`);
  }
  const pathStyle = flags.s3PathStyle ?? parseFlag(env.RAMIFY_S3_PATH_STYLE, 'RAMIFY_S3_PATH_STYLE');
  const prefix = pick(flags.s3Prefix, 'RAMIFY_S3_PREFIX');
  return {
    kind: 's3',
    cacheBudgetBytes,
    connection: {
      bucket,
      region: pick(flags.s3Region, 'RAMIFY_S3_REGION') ?? pick(undefined, 'AWS_REGION') ?? 'us-east-1',
      ...(endpoint ? { endpoint } : {}),
      ...(prefix ? { prefix: prefix.endsWith('/') ? prefix : `${prefix}/` } : {}),
      forcePathStyle: pathStyle ?? false,
      ...(accessKeyId && secretAccessKey ? { credentials: { accessKeyId, secretAccessKey } } : {}),
    },
  };
}

/**
 * Open the configured storage under `dataDir`. With S3, the bucket is checked first (list, write and
 * delete a probe) and uploads a previous run left undone are queued again.
 * @throws RamifyError `STORAGE_UNAVAILABLE` naming what failed and how to fix it.
 */
export async function openSnapshotStorage(dataDir: string, config: SnapshotStorageConfig, logger: Logger): Promise<SnapshotStorage> {
  if (config.kind === 'local') return new LocalSnapshotStorage({ rootDir: dataDir });
  const store = new S3ChunkStore(config.connection);
  await checkS3Access(store.client, config.connection);
  const storage = new TieredSnapshotStorage({ rootDir: dataDir, store, cacheBudgetBytes: config.cacheBudgetBytes, logger, warmUpDownloads: true });
  await storage.start();
  logger.info('snapshot storage: S3 behind the local cache', { bucket: describeBucket(config.connection), cacheBudgetBytes: config.cacheBudgetBytes });
  return storage;
}

/** One line saying where snapshots live, for `ramify serve`'s start-up notes. */
export function describeSnapshotStorage(dataDir: string, config: SnapshotStorageConfig): string {
  if (config.kind === 'local') return `local disk (${dataDir}/snapshots)`;
  const budget = config.cacheBudgetBytes === null ? 'no limit' : `${config.cacheBudgetBytes} bytes`;
  return `${describeBucket(config.connection)}, cached in ${dataDir}/snapshots (budget: ${budget})`;
}

/** Wait for or stop the storage's background work at shutdown (uploads resume at the next start). */
export async function closeSnapshotStorage(storage: SnapshotStorage): Promise<void> {
  if (storage instanceof TieredSnapshotStorage) await storage.close();
  else if (storage instanceof LocalSnapshotStorage) await storage.settle();
}

function parseFlag(value: string | undefined, name: string): boolean | undefined {
  if (value === undefined || value === '') return undefined;
  if (/^(1|true|yes|on)$/i.test(value)) return true;
  if (/^(0|false|no|off)$/i.test(value)) return false;
  throw invalid(`${name}='${value}' is not a boolean (1/true or 0/false)`);
}

function invalid(message: string): RamifyError {
  return new RamifyError('VALIDATION_FAILED', `snapshot storage: ${message}`);
}
