import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RamifyError } from '@ramify/contracts';
import { qemuRelease } from './acceleration.js';
import { assertSameQemu, IMAGE_FORMAT_VERSION, type ImageManifest } from './image-files.js';

const manifest = (qemu?: string): ImageManifest => ({
  formatVersion: IMAGE_FORMAT_VERSION,
  machine: { accelerator: 'tcg', cpuModel: 'qemu64', memoryMB: 1024, cpuCount: 2 } as ImageManifest['machine'],
  baseDisk: '/nonexistent/base.qcow2',
  guestKernel: '6.1.0',
  createdAt: new Date(0).toISOString(),
  ...(qemu === undefined ? {} : { qemu }),
});

test('qemuRelease reads major.minor from the version line, and keeps an unreadable line whole', () => {
  assert.equal(qemuRelease('QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)'), '10.0');
  assert.equal(qemuRelease('QEMU emulator version 7.2.19 (Debian 1:7.2+dfsg-7+deb12u18+b3)'), '7.2');
  assert.equal(qemuRelease('something else'), 'something else');
});

test('an image restores only on the QEMU release that made it; unstamped images were made by 7.2', () => {
  const v10 = 'QEMU emulator version 10.0.2 (Debian)';
  assert.doesNotThrow(() => assertSameQemu(manifest('10.0'), '10.0', v10));
  assert.doesNotThrow(() => assertSameQemu(manifest(), '7.2', 'QEMU emulator version 7.2.19'));
  for (const [image, host] of [[manifest(), '10.0'], [manifest('7.2'), '10.0'], [manifest('10.0'), '7.2']] as const) {
    assert.throws(
      () => assertSameQemu(image, host, `QEMU emulator version ${host}`),
      (e: unknown) => e instanceof RamifyError && e.code === 'IMAGE_INCOMPATIBLE' && /rebuild a template image/.test(e.message) && /the image is kept/.test(e.message),
    );
  }
});
