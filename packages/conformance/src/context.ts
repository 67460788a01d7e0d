/**
 * What every group of conformance cases receives: the target runtime, the shared daemon (set up in the
 * suite's `before` hook, so it is read lazily), and sandbox helpers bound to that daemon.
 */
import type { RuntimeName } from '@ramify/contracts';
import { Sandbox, type ConnectionOpts, type SandboxOpts } from '@ramify/sdk';
import type { DaemonHarness } from './harness.js';

/**
 * The runtime a conformance run targets, and what it is expected to do where runtimes may legitimately
 * differ.
 */
export interface ConformanceTarget {
  runtime: RuntimeName;
  /**
   * What pausing a sandbox with an established TCP connection on its network card does:
   * `refused` (409 `CHECKPOINT_BLOCKED`, the sandbox keeps running; gVisor), or `kept` (the pause
   * succeeds and the connection survives resume). Default `refused`.
   */
  openConnectionAtPause?: 'refused' | 'kept';
  /**
   * What the sandbox's kernel must report, beyond "not the host's kernel" (checked for every runtime):
   * `uname -r` matching `release` and `/proc/version` matching `procVersion`. Default null (only the
   * host check).
   */
  guestKernel?: { release: RegExp; procVersion: RegExp } | null;
  /**
   * The sandbox's own root disk (`diskSizeMB`): its default size in MiB, or null when the runtime has
   * none and refuses `diskSizeMB` (gVisor). Default null.
   */
  rootDisk?: { defaultSizeMB: number } | null;
  /**
   * Forking a running sandbox leaves the parent `running` in place (the runtime checkpoints it without
   * stopping it for good; the microVM) rather than checkpointing and restoring it (gVisor). Default false.
   */
  forkKeepsParentRunning?: boolean;
  /**
   * When the cases marked *extended* run: `every-run` (default) or `full-run`, only when
   * `RAMIFY_TEST_FULL=1` (`npm run test:full`); on other runs they are skipped with that reason. Every
   * area keeps at least one case that runs on every run.
   */
  extendedCases?: 'every-run' | 'full-run';
  /**
   * The groups (their `describe` titles, e.g. `lifecycle`) that run on every run; the others run only
   * on full runs (`RAMIFY_TEST_FULL=1`) and are reported skipped otherwise. For a slow runtime (the
   * microVM under TCG) whose own test files cover the rest. Default null: every group on every run.
   */
  everyRunGroups?: readonly string[] | null;
  /**
   * Known bugs of the runtime, by case title: the case still runs but is reported `todo` with this text
   * (name the file and the symptom), so it does not fail the run until the bug is fixed. Only cases
   * that take their options from {@link SuiteContext.caseOptions} honour it. Default none.
   */
  knownBugs?: Readonly<Record<string, string>>;
}

/** Environment variable that makes a run a full one (`npm run test:full` sets it). */
export const FULL_RUN_ENV = 'RAMIFY_TEST_FULL';

/** True when this process runs the full suite (`RAMIFY_TEST_FULL=1`). */
export function isFullRun(): boolean {
  const value = process.env[FULL_RUN_ENV];
  return value !== undefined && value !== '' && value !== '0';
}

/** Lifetime of sandboxes the cases create (long enough that no deadline interferes), ms. */
export const CASE_SANDBOX_TIMEOUT_MS = 30 * 60_000;

/** Shared state of one suite run. */
export interface SuiteContext {
  readonly target: Required<ConformanceTarget>;
  /**
   * node:test options of the case `title`: `{ skip: reason }` when it is `extended` and this run leaves
   * extended cases out (target `extendedCases: 'full-run'`, not a full run); `{ todo: bug }` when the
   * target lists a known bug for it; else `{}`.
   */
  caseOptions(title: string, opts?: { extended?: boolean }): { skip?: string; todo?: string };
  /** The daemon; throws before the suite's `before` hook ran. */
  daemon(): DaemonHarness;
  /** SDK connection options of the daemon. */
  conn(): ConnectionOpts;
  /** `Sandbox.create` on the target runtime with a long lifetime; `opts` override. */
  create(opts?: Omit<SandboxOpts, keyof ConnectionOpts>): Promise<Sandbox>;
  /** Kill every sandbox that is not killed yet (end of a group). Never throws. */
  killAll(): Promise<void>;
}

/** Build the context over a daemon that is set later (by the suite's `before`). */
export function createContext(target: ConformanceTarget, getDaemon: () => DaemonHarness | undefined, run: { full: boolean } = { full: isFullRun() }): SuiteContext {
  const daemon = (): DaemonHarness => {
    const d = getDaemon();
    if (!d) throw new Error('the conformance daemon is not running (its setup failed)');
    return d;
  };
  return {
    target: { openConnectionAtPause: 'refused', guestKernel: null, rootDisk: null, forkKeepsParentRunning: false, extendedCases: 'every-run', everyRunGroups: null, knownBugs: {}, ...target },
    caseOptions: (title, opts = {}) => {
      if (opts.extended && target.extendedCases === 'full-run' && !run.full) {
        return { skip: `extended ${target.runtime} case: runs with ${FULL_RUN_ENV}=1 (npm run test:full); every CI run keeps a representative subset` };
      }
      const bug = target.knownBugs?.[title];
      return bug ? { todo: `known ${target.runtime} bug: ${bug}` } : {};
    },
    daemon,
    conn: () => daemon().conn,
    create: (opts = {}) => Sandbox.create({ runtime: target.runtime, timeoutMs: CASE_SANDBOX_TIMEOUT_MS, ...opts, ...daemon().conn }),
    killAll: async () => {
      const d = getDaemon();
      if (!d?.running) return;
      try {
        for (const s of await d.liveSandboxes()) await d.call('DELETE', `/v1/sandboxes/${encodeURIComponent(s.id)}`);
      } catch {
        // Teardown retries; a failing kill here must not hide the case's own result.
      }
    },
  };
}
