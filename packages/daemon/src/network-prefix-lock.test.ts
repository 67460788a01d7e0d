/**
 * The network prefix's lock (network-prefix-lock.ts) on a real file and the kernel's real OFD lock, in a
 * temporary directory instead of /run/ramify: a second taker is refused `NETWORK_PREFIX_IN_USE` naming
 * the holder; a released prefix is taken again; another prefix is independent.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RamifyError } from '@ramify/contracts';
import { lockNetworkPrefix } from './network-prefix-lock.js';

test('one holder per prefix: a second is refused naming the first; released, it is taken again', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ramify-prefix-lock-'));
  try {
    const first = lockNetworkPrefix('rpl', '/var/lib/first', dir);
    assert.throws(() => lockNetworkPrefix('rpl', '/var/lib/second', dir), (err: unknown) => {
      assert.ok(err instanceof Error && (err as RamifyError).code === 'NETWORK_PREFIX_IN_USE', String(err));
      assert.deepEqual((err as RamifyError).details, { prefix: 'rpl', pid: process.pid, dataDir: '/var/lib/first' });
      assert.match(err.message, /^the network prefix 'rpl' is in use by another ramify daemon \(pid \d+, data directory \/var\/lib\/first\): .* its own --network-prefix \(1-4 lower-case letters, e\.g\. --network-prefix rmb; a second daemon also needs its own --port, --ingress-listen and --ssh-listen, or 'off' for those two\), or stop that one \(kill \d+\)$/);
      return true;
    });
    const other = lockNetworkPrefix('rpm', '/var/lib/second', dir);
    first.release();
    first.release();
    const again = lockNetworkPrefix('rpl', '/var/lib/second', dir);
    again.release();
    other.release();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
