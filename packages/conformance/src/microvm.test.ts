/**
 * The conformance suite against the QEMU microVM runtime: a real daemon opening only `microvm` (QEMU,
 * the Debian guest kernel, namespaces, SQLite, agent over virtio-serial), network prefix `rmv` (so it
 * can run beside the gVisor suite's `rmc`). Skipped with the reason when QEMU is not installed or the
 * daemon reports the runtime unavailable.
 *
 * Under TCG (no usable KVM, as on CI) every case is slow, so cases marked *extended*, and the groups
 * outside `everyRunGroups` below, run only on a full run (`RAMIFY_TEST_FULL=1`, `npm run test:full`);
 * every CI run keeps the VM-specific groups (see the package README).
 * Run: `npx tsc -b packages/conformance && node --test packages/conformance/dist/microvm.test.js`.
 */
import { MICROVM_PREFIX } from './harness.js';
import { logOptionsFromEnv } from './run-options.js';
import { registerConformanceSuite } from './suite.js';

registerConformanceSuite(
  {
    runtime: 'microvm',
    // The checkpoint freezes the whole VM, TCP state included: an open connection survives pause/resume.
    openConnectionAtPause: 'kept',
    // Debian's generic kernel (linux-image-<abi>-amd64), booted by the runtime: "6.1.0-56-amd64", and
    // "Linux version 6.1.0-56-amd64 (debian-kernel@lists.debian.org) ... Debian 6.1.x ..." in /proc/version.
    guestKernel: { release: /^\d+\.\d+\.\d+-\d+-amd64$/, procVersion: /^Linux version \S+-amd64 \(debian-kernel@lists\.debian\.org\).*Debian/ },
    // The daemon's default `diskSizeMB` for microVM template images.
    rootDisk: { defaultSizeMB: 2048 },
    // Forks of a running sandbox take the fork point in place (checkpointKeepRunning).
    forkKeepsParentRunning: true,
    extendedCases: 'full-run',
    // Under TCG every group costs minutes: every run keeps bad input and what only a VM does with a fork
    // (the parent keeps running); the rest (its disk size, its kernel's name, ...) with RAMIFY_TEST_FULL=1.
    // Pause, resume and fork of a microVM, and its own kernel (`uname` against the guest kernel's release),
    // stay on every run through packages/runtime/microvm's own tests (boot, checkpoint, three forks).
    everyRunGroups: ['bad input', 'fork point'],
  },
  { harness: { prefix: MICROVM_PREFIX, runtimes: ['microvm'], ...logOptionsFromEnv() } },
);
