/**
 * The host role's side of placement for SSH (docs/design/SCALE-OUT.md), as `roles/placement-check.ts` is for
 * HTTP: a host's gateway works on the sandboxes recorded on this host only. A paused sandbox recorded on
 * another host (gone, its image durable) is resumed here only with a live reservation of the store for this
 * host, which the API role's SSH relay names in the user name (`sbx_...+rst_...+rsv_...`) after placement
 * chose this host; the reservation is released once the wake is over. Anything else on another host's
 * sandbox is refused: its runtime instance is not here.
 */
import { acceptSandboxHere, wakeForSsh, type Core, type SandboxRecord } from '@ramify/core';
import type { SshPrincipal } from './auth.js';

/**
 * Resolve with `principal`'s sandbox running, resumed here when paused (within the daemon's wake bound).
 * With `placed` (the host role) the sandbox must be this host's, or paused elsewhere with a reservation.
 * @throws RamifyError PLACEMENT_INVALID (another host's sandbox, no or a foreign reservation), and
 *   {@link wakeForSsh}'s errors.
 */
export async function ensureRunningHere(core: Core, principal: SshPrincipal, placed: boolean): Promise<SandboxRecord> {
  const { sandboxId } = principal;
  const wake = async (): Promise<SandboxRecord> => (await wakeForSsh(core, sandboxId, core.options.ingressWakeTimeoutMs)).record;
  if (!placed) return wake();
  const reservationId = principal.via.method === 'token' ? (principal.via.reservationId ?? null) : null;
  const reservation = await acceptSandboxHere(core, sandboxId, reservationId ?? undefined, { move: reservationId !== null, where: "connect through the API's SSH gateway" });
  if (!reservation) return wake();
  try {
    return await wake();
  } finally {
    await core.store.releaseReservation(reservation.id).catch(() => undefined);
  }
}
