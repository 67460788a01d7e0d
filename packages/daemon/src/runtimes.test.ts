/**
 * Opening runtimes on this host (real QEMU lookup; no VM is started): a runtime that cannot be opened is
 * reported with the reason and what to install, and a create that asks for it fails with that reason.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@ramify/core';
import { openRuntimes } from './runtimes.js';

test('microvm on a host without QEMU: unavailable, naming the binary and the apt package; nothing else opened', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'ramify-runtimes-'));
  try {
    const opened = await openRuntimes({
      dataDir, cacheDir: join(dataDir, 'cache'), logger: silentLogger, nameservers: null,
      names: ['microvm'], microvm: { qemuPath: join(dataDir, 'no-such-qemu-system-x86_64') },
    });
    assert.deepEqual(opened.runtimes, []);
    assert.match(opened.unavailable.microvm ?? '', /no-such-qemu-system-x86_64.*qemu-system-x86|qemu-system-x86.*no-such-qemu-system-x86_64/s);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
});
