/**
 * A real S3-compatible server for tests and benches: `s3rver` (npm, a devDependency) in a child process
 * on 127.0.0.1, on a free port, its objects in a temporary directory. The AWS SDK talks to it unchanged
 * (path-style URLs, static credentials `S3RVER`/`S3RVER`, which it checks). It can be stopped (the
 * process ends) and started again on the same port with the same objects, to play an outage.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
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

/**
 * Start s3rver with one bucket (`bucket`, default `ramify-test`) on a free port of `address` (default
 * 127.0.0.1; a multi-host test gives the address its host namespaces reach).
 */
export async function startLocalS3Server(options: { bucket?: string; address?: string } = {}): Promise<LocalS3Server> {
  const bucket = options.bucket ?? 'ramify-test';
  const address = options.address ?? '127.0.0.1';
  const dir = await mkdtemp(join(tmpdir(), 'ramify-s3rver-'));
  let port = 0;
  let child: ChildProcess | null = null;
  const start = async (): Promise<void> => {
    if (child) return;
    // s3rver encrypts ListObjectsV2's continuation token with DES, which OpenSSL 3 keeps in its legacy
    // provider: without it every truncated listing (MaxKeys below the keys there) answers 500.
    const next = spawn(process.execPath, ['--openssl-legacy-provider', fileURLToPath(new URL('./s3rver-process.js', import.meta.url)), dir, String(port), bucket, address], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [line] = (await Promise.race([once(createInterface({ input: next.stdout! }), 'line'), once(next, 'exit').then(() => [null])])) as [string | null];
    if (line === null) throw new Error('s3rver exited before it listened');
    port = (JSON.parse(line) as { port: number }).port;
    child = next;
  };
  const stop = async (): Promise<void> => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null) return;
    const exited = once(running, 'exit');
    running.kill('SIGTERM');
    await exited;
  };
  await start();
  const endpoint = `http://${address}:${port}`;
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
