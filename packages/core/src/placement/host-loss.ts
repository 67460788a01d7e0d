/**
 * Host loss (issue 16, docs/design/SCALE-OUT.md): the API role's sweep over the host registry. A host whose
 * lease expired is marked `gone` and its running (or mid-operation) sandboxes `error` with a `HOST_LOST`
 * reason in one store transaction (`Store.expireHosts`; Postgres `SKIP LOCKED`, so several API processes
 * sweeping at once write each host off once). Its paused sandboxes are left paused: placement resumes those
 * whose image is durable on another host and answers `SANDBOX_UNAVAILABLE` for the others until it returns.
 * A kill of a sandbox on a lost host is answered by the API itself ({@link killOnLostHost}).
 */
import type { Core } from '../context.js';
import { transition } from '../lifecycle/records.js';
import { collectSnapshots } from '../lifecycle/snapshot-gc.js';
import { isTerminal } from '../lifecycle/state-machine.js';
import type { LostHost } from '../ports/hosts.js';
import type { SandboxRecord } from '../ports/store.js';

/** How often the API role sweeps (ms): a lost host is written off at most this long after its lease expired. */
export const HOST_SWEEP_INTERVAL_MS = 2000;

/**
 * One sweep: write off every host whose lease expired; logs each, and announces each written-off sandbox's
 * transition to `error` on the bus (so it is in the events table and reaches webhooks). Returns what it wrote off.
 */
export async function sweepLostHosts(core: Pick<Core, 'store' | 'logger' | 'events' | 'clock'>): Promise<LostHost[]> {
  const lost = await core.store.expireHosts();
  for (const host of lost) {
    core.logger.warn('host lost: its lease expired; its running sandboxes are now error HOST_LOST', { hostId: host.hostId, sandboxes: host.lostSandboxIds });
    for (const id of host.lostSandboxIds) {
      const sandbox = await core.store.getSandbox(id);
      const from = host.previousStates[id];
      if (sandbox && from) core.events.emitState({ sandboxId: id, from, to: 'error', sandbox, at: core.clock.now() });
    }
  }
  return lost;
}

/** Sweep every `intervalMs` until the returned stop is called (it waits for a sweep in progress). */
export function startHostSweep(core: Pick<Core, 'store' | 'logger' | 'events' | 'clock'>, intervalMs = HOST_SWEEP_INTERVAL_MS): { stop(): Promise<void> } {
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

/**
 * Kill a sandbox whose host is lost, without that host (the API role answers the kill: no live host holds
 * it): `killing` → `killed` in the store, its slot lease released, the images only it needed collected
 * from the bucket. If the host returns, its reconcile stops the instance (no longer one of its live sandboxes).
 * Idempotent on a killed sandbox.
 */
export async function killOnLostHost(core: Core, record: SandboxRecord): Promise<SandboxRecord> {
  if (isTerminal(record.state)) return record;
  const killing = await transition(core, record, 'killing', { operation: { kind: 'kill' } });
  await core.store.releaseSlot(record.id);
  const killed = await transition(core, killing, 'killed', { operation: null, endAt: null, slot: null, pausedSnapshotId: null });
  await collectSnapshots(core, [record.pausedSnapshotId, record.sourceSnapshotId]);
  return killed;
}
