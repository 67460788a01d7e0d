/**
 * Host loss (issue 16, docs/design/SCALE-OUT.md): the API role's sweep over the host registry. A host whose
 * lease expired is marked `gone` and its running (or mid-operation) sandboxes `error` with a `HOST_LOST`
 * reason in one store transaction (`Store.expireHosts`; Postgres `SKIP LOCKED`, so several API processes
 * sweeping at once write each host off once). Its paused sandboxes are left paused: placement resumes those
 * whose image is durable on another host and answers `SANDBOX_UNAVAILABLE` for the others until it returns.
 */
import type { Core } from '../context.js';
import type { LostHost } from '../ports/hosts.js';

/** How often the API role sweeps (ms): a lost host is written off at most this long after its lease expired. */
export const HOST_SWEEP_INTERVAL_MS = 2000;

/** One sweep: write off every host whose lease expired; logs each. Returns what it wrote off. */
export async function sweepLostHosts(core: Pick<Core, 'store' | 'logger'>): Promise<LostHost[]> {
  const lost = await core.store.expireHosts();
  for (const host of lost) {
    core.logger.warn('host lost: its lease expired; its running sandboxes are now error HOST_LOST', { hostId: host.hostId, sandboxes: host.lostSandboxIds });
  }
  return lost;
}

/** Sweep every `intervalMs` until the returned stop is called (it waits for a sweep in progress). */
export function startHostSweep(core: Pick<Core, 'store' | 'logger'>, intervalMs = HOST_SWEEP_INTERVAL_MS): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = sweepLostHosts(core).catch((err: unknown) => core.logger.warn('host sweep failed', { error: err instanceof Error ? err.message : String(err) }));
  }, intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
