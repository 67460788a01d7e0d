/**
 * How many sandboxes each core is bringing up right now (a fork x8 brings up eight): background work that
 * would take CPU from restores (the warm pool's refill, slot prewarming) waits for none.
 */
import type { Core } from '../context.js';

/** Bring-ups running now, per core; kept by `bringUp`. */
export const bringUpsInFlight = new WeakMap<Core, number>();
