/**
 * TEST SUPPORT entry point (run as a child process by `ChildDaemon` in real-egress-support.ts): a real
 * daemon with egress enforcement on, prefix and upstream from argv[2] (JSON `ChildDaemonSpec`). On the
 * first start it registers the prepared rootfs as template `base`. Prints one JSON line
 * `{ url, key }` (`key` null after the first start) once it listens. SIGTERM: delete every sandbox,
 * close, remove the prefix's namespaces and table, exit 0.
 */
import { createApiKey } from '@ramify/core';
import { serve } from './serve.js';
import type { ChildDaemonSpec } from './real-egress-support.js';
import { apiCaller, registerRootfsTemplate, stopRealDaemon } from './real-test-support.js';

const spec = JSON.parse(process.argv[2] ?? '{}') as ChildDaemonSpec;
const server = await serve({
  dataDir: spec.dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: spec.prefix },
  egress: { upstreams: [{ address: spec.upstream }] }, coreOptions: { quietNetworkTimeoutMs: 2_000 }, ...(spec.warmPool ? { warmPool: spec.warmPool } : {}),
});
const key = server.newApiKey;
if (key) {
  await registerRootfsTemplate(server.core, spec.rootfs, { templateId: `tpl_${spec.prefix}`, snapshotId: `snap_${spec.prefix}_base` });
  await server.core.pool.drain(); // The template exists now: the warm pool fills at once.
}
let stopping = false;
process.on('SIGTERM', () => {
  if (stopping) return;
  stopping = true;
  createApiKey(server.core.store, server.core.clock, 'test-teardown')
    .then(({ key: own }) => stopRealDaemon(server, apiCaller(() => server.url, () => own)))
    .then(() => process.exit(0))
    .catch((err: unknown) => {
      process.stderr.write(`stop failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    });
});
process.stdout.write(`${JSON.stringify({ url: server.url, key })}\n`);
