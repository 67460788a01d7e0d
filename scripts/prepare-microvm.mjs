#!/usr/bin/env node
// Prepare the microVM runtime's host side once, so no daemon start or test has to: the Debian guest
// kernel + initramfs (`apt-get download`, unpacked into $RAMIFY_CACHE_DIR/microvm, default
// /var/cache/ramify/microvm) and the acceleration verdict (KVM if a test guest boots under it, else TCG;
// cached there too). Prints the verdict and why. Without QEMU installed it says so and exits 0 (the
// daemon then reports the microvm runtime unavailable, naming the package).
// `--brief`: the verdict without its reason, for when `ramify serve` prints it next (scripts/setup.sh),
// so a failed KVM probe's QEMU message is shown once.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { detectAcceleration, prepareGuestKernel } from '@ramify/runtime-microvm';

if (spawnSync('sh', ['-c', 'command -v qemu-system-x86_64'], { stdio: 'ignore' }).status !== 0) {
  console.log('microvm: qemu-system-x86_64 not installed (apt-get install qemu-system-x86 qemu-utils); skipped');
  process.exit(0);
}
const cacheDir = join(process.env.RAMIFY_CACHE_DIR || '/var/cache/ramify', 'microvm');
const kernel = await prepareGuestKernel({ cacheDir, onLine: (line) => process.stderr.write(`  ${line}\n`) });
const choice = await detectAcceleration({ kernel, cacheDir });
const brief = process.argv.includes('--brief');
console.log(`microvm: guest kernel ${kernel.version}; ${choice.accelerator.toUpperCase()}${brief ? ' (why: see the runtime line of ramify serve below)' : `: ${choice.reason}`}`);
