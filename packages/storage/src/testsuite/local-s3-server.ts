/**
 * A real S3-compatible server for tests and benches: `s3rver` (npm, a devDependency) on 127.0.0.1, on a
 * free port, its objects in a temporary directory. The AWS SDK talks to it unchanged (path-style URLs,
 * static credentials `S3RVER`/`S3RVER`, which it checks). It can be stopped and started again on the
 * same port with the same objects, to play an outage.
 */
import S3rver from 's3rver';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3ConnectionOptions } from '../s3/s3-connection.js';

export interface LocalS3Server {
  endpoint: string;
  bucket: string;
  /** Directory holding the objects. */
  dir: string;
  /** Connection options for this server's bucket under `prefix`. */
  connection(prefix?: string): S3ConnectionOptions;
  /** Stop answering (open connections are closed): requests fail with ECONNREFUSED. */
  stop(): Promise<void>;
  /** Answer again, on the same port with the same objects. */
  start(): Promise<void>;
  /** Stop and delete every object. */
  close(): Promise<void>;
}

/** Credentials s3rver accepts. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } as const;

/** Start s3rver with one bucket (`bucket`, default `ramify-test`) on 127.0.0.1 on a free port. */
export async function startLocalS3Server(options: { bucket?: string } = {}): Promise<LocalS3Server> {
  const bucket = options.bucket ?? 'ramify-test';
  const dir = await mkdtemp(join(tmpdir(), 'ramify-s3rver-'));
  let port = 0;
  let server: S3rver | null = null;
  const start = async (): Promise<void> => {
    if (server) return;
    const next = new S3rver({ address: '127.0.0.1', port, silent: true, directory: dir, configureBuckets: [{ name: bucket }] });
    port = (await next.run()).port;
    server = next;
  };
  const stop = async (): Promise<void> => {
    const running = server;
    server = null;
    if (!running) return;
    const closed = running.close();
    running.httpServer.closeAllConnections();
    await closed;
  };
  await start();
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    bucket,
    dir,
    connection: (prefix = '') => ({ endpoint, region: 'us-east-1', bucket, prefix, forcePathStyle: true, credentials: { ...S3RVER_CREDENTIALS } }),
    stop,
    start,
    close: async () => {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
