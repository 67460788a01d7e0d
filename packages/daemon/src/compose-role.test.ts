/**
 * The API role's composition builds nothing of a host (docs/design/SCALE-OUT.md): no runtime, no sandbox
 * network, no egress enforcement, no template builder. Real SQLite and local snapshot storage; nothing is
 * spawned (PATH is empty while it composes: runsc, nft, ip or QEMU would not be found).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { networkFor, runtimeFor, silentLogger } from '@ramify/core';
import { compose } from './compose.js';

test('the API role composes a core without runtime, network, egress enforcement or template builder; starting a sandbox here is RUNTIME_UNAVAILABLE', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ramify-compose-api-'));
  const path = process.env.PATH;
  process.env.PATH = '/nonexistent';
  let composition: Awaited<ReturnType<typeof compose>>;
  try {
    composition = await compose({ role: 'api', dataDir: dir, cacheDir: join(dir, 'cache'), logger: silentLogger, metrics: 'off' });
  } finally {
    process.env.PATH = path;
  }
  try {
    const { core } = composition;
    assert.equal(core.network, null);
    assert.deepEqual(core.runtimes, []);
    assert.deepEqual([core.templateBuilder, core.egressEnforcer, core.networkEnforcer], [undefined, undefined, undefined]);
    assert.throws(() => networkFor(core), (err: { code?: string; message?: string }) => err.code === 'RUNTIME_UNAVAILABLE' && /runs no sandboxes/.test(err.message ?? ''));
    assert.throws(() => runtimeFor(core), { code: 'RUNTIME_UNAVAILABLE' });
    assert.deepEqual((await readdir(dir)).filter((f) => !f.startsWith('ramify.db') && f !== 'host-id' && f !== 'snapshots').sort(), [], 'nothing of a host under the data dir');
  } finally {
    await composition.close();
    await rm(dir, { recursive: true, force: true });
  }
});
