// Shared by the benches that run their own daemon in the bench's process, as the real tests do
// (bench/ingress, bench/interactive): the base rootfs, a daemon on a temporary data dir with its own
// network prefix and that rootfs registered as template `base`, and a stop that leaves nothing behind
// even when the daemon cannot be stopped through its API. As root; needs the packages built.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '../../packages/daemon/dist/serve.js';
import { apiCaller, registerRootfsTemplate, stopRealDaemon } from '../../packages/daemon/dist/real-test-support.js';
import { forceCleanup } from '../../packages/daemon/dist/real-egress-support.js';

const root = new URL('../..', import.meta.url).pathname;

/** The base rootfs: RAMIFY_TEST_ROOTFS, else built once into the shared cache (as `npm test` does). */
export function benchRootfs() {
  if (process.env.RAMIFY_TEST_ROOTFS) return process.env.RAMIFY_TEST_ROOTFS;
  const r = spawnSync(process.execPath, [join(root, 'scripts/prepare-test-rootfs.mjs')], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error('could not prepare the base root filesystem');
  return r.stdout.trim().split('\n').pop();
}

/**
 * Start a gVisor daemon in this process under network prefix `prefix` (a temp data dir named after
 * `name`; `options` are added to serve()'s, e.g. `ingress`), with the base rootfs as template `base`.
 * Returns `{ server, key, call, dataDir, stop }`; `stop()` kills its sandboxes and removes its namespaces,
 * tables and data dir.
 */
export async function startBenchDaemon({ prefix, name, options = {} }) {
  const rootfs = benchRootfs();
  const dataDir = await mkdtemp(join(tmpdir(), `ramify-bench-${name}-`));
  const server = await serve({ dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix }, ...options });
  const key = server.newApiKey ?? '';
  const call = apiCaller(() => server.url, () => key);
  const stop = async () => {
    await stopRealDaemon(server, call).catch(async (err) => {
      console.error(`stopping the daemon failed (${err.message}); removing what it made by force`);
      await server.close().catch(() => undefined);
      await forceCleanup(prefix, dataDir);
    });
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    await registerRootfsTemplate(server.core, rootfs, { templateId: `tpl_${prefix}`, snapshotId: `snap_${prefix}_base` });
  } catch (err) {
    await stop();
    throw err;
  }
  return { server, key, call, dataDir, stop };
}
