/**
 * Put the prepared base rootfs into a shared database and bucket as template `base`, as a first machine
 * of a cluster would: a daemon in this process (gVisor, its own data directory and network prefix, host
 * id `<prefix>-seed`) boots and checkpoints it, the image is uploaded to S3 (waited for until durable),
 * and the daemon is closed and its directory removed. Every host of the cluster then runs the template
 * from the bucket without building it (the first create on a host downloads the image). Also makes the
 * database's first API key. Test support only.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitDurable, S3RVER_CREDENTIALS } from '@ramify/storage/testsuite';
import { registerRootfsTemplate } from '../real-test-support.js';
import { serve } from '../serve.js';
import { sweepHost } from './host-leftovers.js';

export interface SeedOptions {
  /** Network prefix of the seeding daemon (its slot namespaces, in this process's namespace). */
  networkPrefix: string;
  databaseUrl: string;
  s3: { endpoint: string; bucket: string };
  /** The base root filesystem (RAMIFY_TEST_ROOTFS). */
  rootfs: string;
}

/**
 * Seed template `base` and return the API key made on the database's first start and the template's ids.
 * @throws Error when the key exists already (seed a fresh database) or the upload does not finish in 2 minutes.
 */
export async function seedTemplate(options: SeedOptions): Promise<{ apiKey: string; templateId: string; snapshotId: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), `ramify-${options.networkPrefix}-seed-`));
  const templateId = `tpl_${options.networkPrefix}`;
  const snapshotId = `snap_${options.networkPrefix}_base`;
  const server = await serve({
    dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: options.networkPrefix },
    hostId: `${options.networkPrefix}-seed`, databaseUrl: options.databaseUrl, warmPool: 'off',
    snapshotStorage: { s3Endpoint: options.s3.endpoint, s3Bucket: options.s3.bucket, s3PathStyle: true, s3Credentials: { ...S3RVER_CREDENTIALS } },
  });
  try {
    if (!server.newApiKey) throw new Error('the database has an API key already: seed a fresh database');
    await registerRootfsTemplate(server.core, options.rootfs, { templateId, snapshotId });
    await waitDurable(server.core.storage, snapshotId, 120_000);
    return { apiKey: server.newApiKey, templateId, snapshotId };
  } finally {
    const network = server.core.network as { destroyAll?: () => Promise<void> };
    await server.close();
    await network.destroyAll?.();
    await sweepHost({ dataDir, networkPrefix: options.networkPrefix });
    await rm(dataDir, { recursive: true, force: true });
  }
}
