/**
 * Placement (issue 16, docs/design/SCALE-OUT.md): which host daemon runs a sandbox, decided by an API
 * process over the shared store's host registry. One concept, three decisions:
 * - **create**: a host with room (memory, CPUs, slots), least loaded of a few sampled, preferring one that
 *   caches the sandbox's image; capacity is reserved in the same store transaction that chooses it
 *   (`Store.reserveHost`), so concurrent API processes never over-commit or double-place.
 * - **fork**: the parent's host (the children's memory is the parent's image, on that host's disk), which
 *   must have room for all N children: capacity for them is reserved there like a create's, or the fork is
 *   refused (`NO_HOST_CAPACITY` naming the host and what is missing) before anything is created.
 * - **resume**: a paused sandbox resumes on the host holding its image while that host is live; otherwise on
 *   any host with room once the image is durable in remote storage (the host downloads it on open). Its
 *   image only on a lost host (not yet uploaded) is `SANDBOX_UNAVAILABLE` until that host returns.
 * A reservation travels to the host in the {@link PLACEMENT_HEADER}; the host accepts it only when the store
 * holds a live reservation for itself ({@link acceptPlacement}), so a client cannot choose a host.
 */
import { RamifyError, type CreateSandboxRequest } from '@ramify/contracts';
import { randomBytes } from 'node:crypto';
import type { Core } from '../context.js';
import { findVisibleSnapshot } from '../catalog/snapshots.js';
import { findVisibleTemplate } from '../catalog/templates.js';
import type { HostRecord, PlacementReservation } from '../ports/hosts.js';
import type { SandboxRecord } from '../ports/store.js';

/** The request header carrying a placement reservation's id from the API to the chosen host. */
export const PLACEMENT_HEADER = 'x-ramify-placement';

/** How long a reservation holds a host's capacity if the host never records the sandbox (ms). */
export const RESERVATION_TTL_MS = 120_000;

/** Where a call goes: a host's URL, and the reservation to hand it (null: the host holds the sandbox already). */
export interface PlacementTarget {
  hostId: string;
  url: string;
  reservation: PlacementReservation | null;
}

const newReservationId = (): string => `rsv_${randomBytes(12).toString('hex')}`;

/** Whether `host` may take calls now: active or draining, its lease unexpired on the database's clock `now`. */
export function hostIsLive(host: HostRecord | null, now: number): boolean {
  return host !== null && host.state !== 'gone' && host.leaseExpiresAt > now;
}

/**
 * Choose and reserve a host for a create of team `teamId`.
 * @throws RamifyError NO_HOST_CAPACITY when no live active host has room.
 */
export async function placeCreate(core: Pick<Core, 'store' | 'options'>, request: CreateSandboxRequest, teamId: string): Promise<PlacementTarget> {
  const image = await sourceImage(core, request, teamId);
  const reservation = await core.store.reserveHost({
    reservationId: newReservationId(), memoryMB: request.memoryMB ?? image?.memoryMB ?? core.options.defaultMemoryMB,
    cpus: request.cpuCount ?? image?.cpuCount ?? core.options.defaultCpuCount, imageId: image?.snapshotId ?? null, ttlMs: RESERVATION_TTL_MS,
  });
  return { hostId: reservation.hostId, url: reservation.url, reservation };
}

/** The image a create starts from and its recorded resources; null when it cannot be found (the host then says why). */
async function sourceImage(core: Pick<Core, 'store' | 'options'>, request: CreateSandboxRequest, teamId: string): Promise<{ snapshotId: string; memoryMB: number | null; cpuCount: number | null } | null> {
  if (request.snapshot !== undefined) {
    const snapshot = await findVisibleSnapshot(core, request.snapshot, teamId);
    return snapshot ? { snapshotId: snapshot.id, memoryMB: snapshot.memoryMB, cpuCount: snapshot.cpuCount } : null;
  }
  const template = await findVisibleTemplate(core, request.template ?? core.options.defaultTemplate, teamId);
  if (!template) return null;
  const images = template.images.length > 0 ? template.images : [{ runtime: template.runtime, snapshotId: template.snapshotId }];
  const image = images.find((i) => i.runtime === request.runtime) ?? images[0];
  return image ? { snapshotId: image.snapshotId, memoryMB: null, cpuCount: null } : null;
}

/**
 * The host a call on `record` goes to: its recorded host while that is live. A paused sandbox whose host is
 * gone or expired resumes elsewhere when its image is durable (a reservation on another host; `resume`
 * only, other calls on it are answered by its recorded host's absence).
 * @throws RamifyError HOST_LOST (a non-paused sandbox on a lost host), SANDBOX_UNAVAILABLE (its image is
 *   not yet uploaded from the lost host), NO_HOST_CAPACITY.
 */
export async function placeOnSandbox(core: Pick<Core, 'store' | 'storage'>, record: SandboxRecord, purpose: 'resume' | 'call'): Promise<PlacementTarget> {
  const host = record.hostId === null ? null : await core.store.getHost(record.hostId);
  const now = await core.store.databaseNow();
  if (host !== null && hostIsLive(host, now)) return { hostId: host.id, url: host.url, reservation: null };
  const hostId = record.hostId ?? 'unknown';
  if (record.state !== 'paused' || purpose !== 'resume' || record.pausedSnapshotId === null) {
    throw new RamifyError('HOST_LOST', `sandbox '${record.id}' is on host '${hostId}', which is not live (${host ? `${host.state}, last heartbeat ${new Date(host.lastHeartbeatAt).toISOString()}` : 'not registered'})${record.state === 'paused' ? ': resume it to move it to another host' : ''}`, {
      sandboxId: record.id, hostId,
    });
  }
  const image = await core.store.getSnapshot(record.pausedSnapshotId);
  if (image === null || !(await imageLeftHost(core, host, record.pausedSnapshotId, image.createdAt))) {
    throw new RamifyError('SANDBOX_UNAVAILABLE', `sandbox '${record.id}' is paused on host '${hostId}', which is gone before its image reached remote storage: it can be resumed once that host returns`, {
      sandboxId: record.id, hostId,
    });
  }
  const reservation = await core.store.reserveHost({
    reservationId: newReservationId(), memoryMB: record.memoryMB, cpus: record.cpuCount, imageId: record.pausedSnapshotId, ttlMs: RESERVATION_TTL_MS,
  });
  return { hostId: reservation.hostId, url: reservation.url, reservation };
}

/**
 * Reserve room for `count` children of `parent` (each with its memoryMB and cpuCount, one network slot) on
 * the parent's host, the only place a fork can run; the same transaction and locking as a create's.
 * @throws RamifyError HOST_LOST (the parent's host is not live), NO_HOST_CAPACITY (the host is not active,
 *   draining for one, or lacks room: the message names it and what is missing).
 */
export async function placeFork(core: Pick<Core, 'store'>, parent: SandboxRecord, count: number): Promise<PlacementTarget> {
  const host = parent.hostId === null ? null : await core.store.getHost(parent.hostId);
  if (host === null || !hostIsLive(host, await core.store.databaseNow())) {
    throw new RamifyError('HOST_LOST', `sandbox '${parent.id}' is on host '${parent.hostId ?? 'unknown'}', which is not live: it cannot be forked${parent.state === 'paused' ? ' (resume it to move it to another host, then fork it there)' : ''}`, {
      sandboxId: parent.id, hostId: parent.hostId ?? 'unknown',
    });
  }
  const reservation = await core.store.reserveHost({
    reservationId: newReservationId(), hostId: host.id, count, memoryMB: parent.memoryMB, cpus: parent.cpuCount, imageId: null, ttlMs: RESERVATION_TTL_MS,
  });
  return { hostId: reservation.hostId, url: reservation.url, reservation };
}

/** A host's clock may be this far off the database's (registration refuses more), ms. */
export const MAX_CLOCK_SKEW_MS = 2000;

/**
 * Whether image `snapshotId` (written at `imageCreatedAt` on the host's clock) left its lost `host`: the
 * host's last heartbeat did not list it as pending upload, and it was written before that heartbeat (with
 * the clock skew allowed: an image written after it may not have been uploaded).
 */
export function imageDurable(host: HostRecord, snapshotId: string, imageCreatedAt: number): boolean {
  return !host.pendingUploadIds.includes(snapshotId) && imageCreatedAt + MAX_CLOCK_SKEW_MS <= host.lastHeartbeatAt;
}

/**
 * Whether a lost host's image can be opened elsewhere: its last heartbeat says so ({@link imageDurable}), or,
 * since a heartbeat lags an upload by up to its interval (and a host stopped or killed right after an upload
 * sends no more), the remote storage itself has the image's manifest, which an upload writes last.
 */
async function imageLeftHost(core: Pick<Core, 'storage'>, host: HostRecord | null, snapshotId: string, imageCreatedAt: number): Promise<boolean> {
  if (host !== null && imageDurable(host, snapshotId, imageCreatedAt)) return true;
  if (!core.storage.uploadState) return false;
  try {
    return (await core.storage.uploadState(snapshotId)).state === 'durable';
  } catch {
    return false;
  }
}

/**
 * On the host: accept a forwarded create, fork or cross-host resume only with a live reservation of the
 * store for this host, holding at least `sandboxes` sandboxes (a fork of N: N; default 1). Returns the
 * reservation (the caller releases it once the sandboxes are recorded).
 * @throws RamifyError PLACEMENT_INVALID otherwise.
 */
export async function acceptPlacement(core: Pick<Core, 'store' | 'hostId'>, reservationId: string | undefined, sandboxes = 1): Promise<PlacementReservation> {
  const reservation = reservationId ? await core.store.getReservation(reservationId) : null;
  if (!reservation || reservation.hostId !== core.hostId) {
    throw new RamifyError('PLACEMENT_INVALID', `this host (${core.hostId}) takes creates, forks and moves only as placed by an API process: ${reservationId ? `reservation '${reservationId}' is not this host's or has expired` : `no ${PLACEMENT_HEADER} header`}; call the API, not a host`, {
      hostId: core.hostId,
    });
  }
  if (reservation.sandboxes < sandboxes) {
    throw new RamifyError('PLACEMENT_INVALID', `reservation '${reservation.id}' holds room for ${reservation.sandboxes} sandbox(es), not ${sandboxes}: call the API, not a host`, {
      hostId: core.hostId, reserved: reservation.sandboxes, requested: sandboxes,
    });
  }
  return reservation;
}

/** Whether `record` is this host's (or no host's: a single-machine daemon's). */
export function heldHere(core: Pick<Core, 'hostId'>, record: Pick<SandboxRecord, 'hostId'>): boolean {
  return record.hostId === null || record.hostId === core.hostId;
}

/**
 * On the host, for every door (HTTP, port URLs, SSH): a call on `sandboxId` works on the sandboxes this host
 * holds. One recorded on another host passes only when `move` allows it and it is paused (being moved off a
 * lost host), with a live reservation of this host (returned: the caller releases it once the call is done);
 * null for a sandbox of this host or an unknown one (the door answers those itself).
 * @param where what the refusal tells the caller to do instead, e.g. `call the API, which forwards to its host`.
 * @throws RamifyError PLACEMENT_INVALID otherwise; {@link acceptPlacement}'s errors.
 */
export async function acceptSandboxHere(core: Pick<Core, 'store' | 'hostId'>, sandboxId: string, reservationId: string | undefined, options: { move: boolean; where: string }): Promise<PlacementReservation | null> {
  const record = await core.store.getSandbox(sandboxId);
  if (!record || heldHere(core, record)) return null;
  if (options.move && record.state === 'paused') return acceptPlacement(core, reservationId);
  throw new RamifyError('PLACEMENT_INVALID', `sandbox '${sandboxId}' is on host '${record.hostId}', not this one (${core.hostId}): ${options.where}`, {
    sandboxId, hostId: record.hostId,
  });
}
