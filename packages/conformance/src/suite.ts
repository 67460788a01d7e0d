/**
 * `registerConformanceSuite(target)`: registers every conformance case (node:test) against ONE real
 * daemon for `target.runtime`: real runtime, network namespaces, SQLite and agent, driven through the
 * SDK and the REST API. The daemon opens only the runtimes the run needs (default: the target) and the
 * base template is built for the target only. Groups run in order and share the daemon:
 * bad input → commands → files → guest kernel → root disk → memory pressure → metering → lifecycle → fork point → guards → crash recovery (last: it restarts
 * the daemon). Cases marked extended run only on full runs when the target says so
 * (`extendedCases: 'full-run'`, `RAMIFY_TEST_FULL=1`), and so do groups a target leaves out of
 * `everyRunGroups`. On the way out every sandbox is killed, the daemon
 * stopped, its QEMU/runsc leftovers, every `<prefix>-*` namespace and the nftables table removed; the
 * `after` hook fails if a namespace survives.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import type { RuntimeName } from '@ramify/contracts';
import { registerBadInputCases } from './cases/bad-input.js';
import { registerCommandCases } from './cases/commands.js';
import { registerCrashCases } from './cases/crash.js';
import { registerFileCases } from './cases/files.js';
import { registerGuestKernelCases } from './cases/guest-kernel.js';
import { registerGuardCases } from './cases/guards.js';
import { registerForkPointCases } from './cases/fork-point.js';
import { registerLifecycleCases } from './cases/lifecycle.js';
import { registerMemoryCases } from './cases/memory.js';
import { registerMeteringCases } from './cases/metering.js';
import { registerRootDiskCases } from './cases/root-disk.js';
import { createContext, isFullRun, type ConformanceTarget, type SuiteContext } from './context.js';
import { DaemonHarness, type HarnessOptions } from './harness.js';
import { listNamespaces } from './host-cleanup.js';

/** Whole-suite bound, ms (cases never assert timings; this only stops a hung run). */
const SUITE_TIMEOUT_MS = 30 * 60_000;

/** Options of {@link registerConformanceSuite} beyond the target. */
export interface ConformanceSuiteOpts {
  /** Passed to the daemon harness (prefix, cache dir, log level, runtimes to open). */
  harness?: Omit<HarnessOptions, 'runtime'>;
  /** Run the extended cases too (see {@link ConformanceTarget.extendedCases}); default {@link isFullRun}. */
  full?: boolean;
}

/** Host tools each runtime needs besides `ip` and `nft`. */
const RUNTIME_TOOLS: Record<RuntimeName, string[]> = {
  gvisor: ['runsc'],
  microvm: ['qemu-system-x86_64', 'qemu-img'],
};

/** Why the suite for `runtime` cannot run on this host (not root, a tool missing), or false. */
export function conformanceSkipReason(runtime: RuntimeName = 'gvisor'): string | false {
  if (process.getuid?.() !== 0) return `needs root (network namespaces, nftables, ${RUNTIME_TOOLS[runtime].join(', ')})`;
  for (const tool of ['ip', 'nft', ...RUNTIME_TOOLS[runtime]]) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) {
      return runtime === 'microvm' && tool.startsWith('qemu')
        ? `${tool} is not installed (apt-get install qemu-system-x86 qemu-utils): the microVM runtime cannot run here`
        : `${tool} is not installed`;
    }
  }
  return false;
}

/**
 * Register the conformance suite for `target` (call at the top level of a test file). The daemon is
 * opened while the suite is being built (node:test awaits an async `describe`), so a runtime the daemon
 * reports unavailable (`GET /v1/health` → `unavailableRuntimes`) skips the whole suite with the
 * daemon's reason instead of failing every case.
 */
export function registerConformanceSuite(target: ConformanceTarget, opts: ConformanceSuiteOpts = {}): void {
  let daemon: DaemonHarness | undefined;
  const full = opts.full ?? isFullRun();
  const ctx = createContext(target, () => daemon, { full });
  describe(`conformance (${target.runtime})`, { skip: conformanceSkipReason(target.runtime), timeout: SUITE_TIMEOUT_MS }, async () => {
    daemon = await DaemonHarness.open({ ...opts.harness, runtime: target.runtime });
    const unavailable = await daemon.unavailableRuntimes().then((u) => u[target.runtime], async (err: unknown) => {
      await daemon?.teardown();
      throw err;
    });
    if (unavailable !== undefined) {
      await daemon.teardown();
      daemon = undefined;
      test(`the ${target.runtime} runtime is available`, { skip: `the daemon reports ${target.runtime} unavailable: ${unavailable}` }, () => undefined);
      return;
    }
    before(async () => {
      try {
        await ctx.daemon().buildBaseTemplate();
      } catch (err) {
        throw new Error(`building the base template failed: ${(err as Error).message}\n--- daemon log tail ---\n${await ctx.daemon().logTail()}`);
      }
    });
    after(async () => {
      const prefix = daemon?.prefix;
      await daemon?.teardown();
      daemon = undefined;
      if (prefix) assert.deepEqual(await listNamespaces(prefix), [], `no ${prefix}-* namespace survives the suite`);
    });

    const groups: Array<[string, (c: SuiteContext) => void]> = [
      ['bad input', registerBadInputCases],
      ['commands', registerCommandCases],
      ['files', registerFileCases],
      ['guest kernel', registerGuestKernelCases],
      ['root disk', registerRootDiskCases],
      ['memory pressure', registerMemoryCases],
      ['metering', registerMeteringCases],
      ['lifecycle', registerLifecycleCases],
      ['fork point', registerForkPointCases],
      ['guards', registerGuardCases],
      ['crash recovery', registerCrashCases],
    ];
    const everyRun = target.everyRunGroups;
    for (const [name, register] of groups) {
      if (!everyRun || everyRun.includes(name) || full) register(ctx);
      else test(`${name} (group)`, { skip: `the ${target.runtime} runtime runs this group with RAMIFY_TEST_FULL=1 (npm run test:full); every run keeps ${everyRun.join(', ')}` }, () => undefined);
    }
  });
}
