/**
 * `registerConformanceSuite(target)`: registers every conformance case (node:test) against ONE real
 * daemon for `target.runtime`: real runtime, network namespaces, SQLite and agent, driven through the
 * SDK and the REST API. Groups run in order and share the daemon (its template is built once):
 * bad input → commands → files → lifecycle → guards → crash recovery (last: it restarts the daemon).
 * On the way out every sandbox is killed, the daemon stopped, and every `<prefix>-*` namespace and the
 * nftables table removed; the `after` hook fails if a namespace survives.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe } from 'node:test';
import { registerBadInputCases } from './cases/bad-input.js';
import { registerCommandCases } from './cases/commands.js';
import { registerCrashCases } from './cases/crash.js';
import { registerFileCases } from './cases/files.js';
import { registerGuardCases } from './cases/guards.js';
import { registerLifecycleCases } from './cases/lifecycle.js';
import { createContext, type ConformanceTarget } from './context.js';
import { DaemonHarness, type HarnessOptions } from './harness.js';
import { listNamespaces } from './host-cleanup.js';

/** Whole-suite bound, ms (cases never assert timings; this only stops a hung run). */
const SUITE_TIMEOUT_MS = 30 * 60_000;

/** Options of {@link registerConformanceSuite} beyond the target. */
export interface ConformanceSuiteOpts {
  /** Passed to the daemon harness (prefix, cache dir, log level). */
  harness?: Omit<HarnessOptions, 'runtime'>;
}

/** Why the suite cannot run on this host, or false. */
export function conformanceSkipReason(): string | false {
  if (process.getuid?.() !== 0) return 'needs root (network namespaces, nftables, runsc)';
  for (const tool of ['runsc', 'ip', 'nft']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed`;
  }
  return false;
}

/** Register the conformance suite for `target` (call at the top level of a test file). */
export function registerConformanceSuite(target: ConformanceTarget, opts: ConformanceSuiteOpts = {}): void {
  let daemon: DaemonHarness | undefined;
  const ctx = createContext(target, () => daemon);
  describe(`conformance (${target.runtime})`, { skip: conformanceSkipReason(), timeout: SUITE_TIMEOUT_MS }, () => {
    before(async () => {
      daemon = await DaemonHarness.open({ ...opts.harness, runtime: target.runtime });
      try {
        await daemon.buildBaseTemplate();
      } catch (err) {
        throw new Error(`building the base template failed: ${(err as Error).message}\n--- daemon log tail ---\n${await daemon.logTail()}`);
      }
    });
    after(async () => {
      const prefix = daemon?.prefix;
      await daemon?.teardown();
      daemon = undefined;
      if (prefix) assert.deepEqual(await listNamespaces(prefix), [], `no ${prefix}-* namespace survives the suite`);
    });

    registerBadInputCases(ctx);
    registerCommandCases(ctx);
    registerFileCases(ctx);
    registerLifecycleCases(ctx);
    registerGuardCases(ctx);
    registerCrashCases(ctx);
  });
}
