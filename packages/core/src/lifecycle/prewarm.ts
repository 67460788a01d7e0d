/**
 * Slot prewarming: the store hands out the lowest free slot, so the next creates and fork children will
 * most likely get the lowest free slots now. Preparing their network namespaces in the background takes
 * the ~60 ms (idle) to ~600 ms (eight at once on two cores) of namespace setup off the critical path.
 */
import type { Core } from '../context.js';
import { bringUpsInFlight } from './bring-ups-in-flight.js';

/** Cores whose prewarm was asked for while bring-ups ran: it runs when the last one ends. */
const deferred = new WeakSet<Core>();

/**
 * Ask the network to prepare the `core.options.prewarmSlots` lowest free slots, and to tear down idle
 * slots outside that pool. Fire and forget: never rejects; a slot allocated meanwhile finds its
 * namespaces ready (or builds them itself). While sandboxes are being brought up (a fork x8 restores
 * eight at once) it is deferred to the end of the last one ({@link flushDeferredPrewarm}): building the
 * next slots' namespaces (~6 spawns each) and tearing down others would take CPU from the restores on a
 * small host, and the slots those bring-ups use were prepared before they began.
 */
export function prewarmFreeSlots(core: Core): void {
  if (core.options.prewarmSlots <= 0) return;
  if ((bringUpsInFlight.get(core) ?? 0) > 0) {
    deferred.add(core);
    return;
  }
  nextFreeSlots(core, null)
    .then(async (free) => {
      core.network.prewarm(free);
      // Shrink: idle slots outside the pool (pushed out when lower slots were freed) are torn down,
      // each only if still unleased at the moment no attach of it can run.
      const leased = new Set((await core.store.listSlots(core.hostId)).map((l) => l.slot));
      const pool = new Set(free);
      for (const slot of await core.network.listSlots()) {
        if (leased.has(slot) || pool.has(slot)) continue;
        void core.network
          .detachIfUnused(slot, async () => !(await core.store.listSlots(core.hostId)).some((l) => l.slot === slot))
          .catch(() => undefined);
      }
    })
    .catch((err: unknown) => core.logger.warn('slot prewarm failed', { error: err instanceof Error ? err.message : String(err) }));
}

/** The `prewarmSlots` lowest slots not leased (counting `releasing`'s lease as free). */
async function nextFreeSlots(core: Core, releasing: string | null): Promise<number[]> {
  const used = new Set((await core.store.listSlots(core.hostId)).filter((l) => l.sandboxId !== releasing).map((l) => l.slot));
  const free: number[] = [];
  for (let slot = 1; free.length < core.options.prewarmSlots; slot++) if (!used.has(slot)) free.push(slot);
  return free;
}

/** True when `slot`, once `sandboxId` lets it go, is among the next slots to be handed out: keep its namespaces. */
export async function isWarmSlot(core: Core, slot: number, sandboxId: string): Promise<boolean> {
  if (core.options.prewarmSlots <= 0) return false;
  return (await nextFreeSlots(core, sandboxId)).includes(slot);
}

/** Run the prewarm deferred while bring-ups ran, if any (called when the last bring-up ended). */
export function flushDeferredPrewarm(core: Core): void {
  if (!deferred.delete(core)) return;
  prewarmFreeSlots(core);
}
