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
}

/** Lifetime of sandboxes the cases create (long enough that no deadline interferes), ms. */
export const CASE_SANDBOX_TIMEOUT_MS = 30 * 60_000;

/** Shared state of one suite run. */
export interface SuiteContext {
  readonly target: Required<ConformanceTarget>;
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
export function createContext(target: ConformanceTarget, getDaemon: () => DaemonHarness | undefined): SuiteContext {
  const daemon = (): DaemonHarness => {
    const d = getDaemon();
    if (!d) throw new Error('the conformance daemon is not running (its setup failed)');
    return d;
  };
  return {
    target: { openConnectionAtPause: 'refused', ...target },
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
