/**
 * Host registry rows (migration 29; core's `ports/hosts.ts`): host daemons with leases on the database's
 * clock, and placement reservations. Placement counts a host's load from the store's own rows (its
 * sandboxes from creating to killing, its network slots, its live reservations), never from what the host
 * last reported, so a reservation made a moment ago is always counted. On Postgres the chosen host's row is
 * locked (`FOR UPDATE SKIP LOCKED`) while its load is counted again and the reservation written: two
 * processes placing at once take turns per host. SQLite has one connection, so its transactions take turns.
 */
import { RamifyError, quote, type SandboxState } from '@ramify/contracts';
import type { HostHeartbeat, HostRecord, HostRegistration, HostState, LostHost, PlacementRequest, PlacementReservation } from '@ramify/core';
import { sql, type Selectable } from 'kysely';
import { dialectOf } from './prepared.js';
import { inTransaction, type Executor, type HostsTable } from './schema.js';

/** Sandbox states that hold a host's capacity. */
const OCCUPYING = ['creating', 'running', 'pausing', 'resuming', 'killing'];
/** Sandbox states written off when their host is lost. */
const LOST_ON_HOST_LOSS = ['creating', 'running', 'pausing', 'resuming', 'killing'];

const hostFromRow = (r: Selectable<HostsTable>): HostRecord => ({
  id: r.id, url: r.url, state: r.state as HostState, leaseExpiresAt: Number(r.lease_expires_at), lastHeartbeatAt: Number(r.last_heartbeat_at), startedAt: Number(r.started_at),
  capacity: { memoryMB: Number(r.memory_mb), cpus: Number(r.cpus), slots: Number(r.slots) },
  load: { runningSandboxes: Number(r.running_sandboxes), memoryReservedMB: Number(r.memory_reserved_mb) },
  cachedImageIds: JSON.parse(r.cached_images) as string[], pendingUploadIds: JSON.parse(r.pending_uploads) as string[],
  ingressAddress: r.ingress_address ?? null, sshAddress: r.ssh_address ?? null,
});

/** The database's clock (ms): Postgres `clock_timestamp()`; SQLite: this process's (the caller's). */
export async function databaseNow(db: Executor): Promise<number> {
  if (dialectOf(db) !== 'postgres') return Date.now();
  const r = await sql<{ now: string | number }>`SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now`.execute(db);
  return Number(r.rows[0]?.now);
}

export async function getHost(db: Executor, id: string): Promise<HostRecord | null> {
  const row = await db.selectFrom('hosts').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? hostFromRow(row) : null;
}

export async function listHosts(db: Executor): Promise<HostRecord[]> {
  return (await db.selectFrom('hosts').selectAll().orderBy('id').execute()).map(hostFromRow);
}

/** @throws RamifyError HOST_CLOCK_SKEW when the host's clock is further than `maxClockSkewMs` off the database's. */
export async function registerHost(db: Executor, reg: HostRegistration): Promise<HostRecord> {
  const now = await databaseNow(db);
  const skewMs = reg.hostNowMs - now;
  if (Math.abs(skewMs) > reg.maxClockSkewMs) {
    throw new RamifyError('HOST_CLOCK_SKEW', `host '${reg.id}' clock is ${skewMs > 0 ? 'ahead of' : 'behind'} the database's by ${Math.abs(skewMs)} ms (at most ${reg.maxClockSkewMs} ms allowed): synchronise its clock (chrony, systemd-timesyncd) and start it again`, {
      hostId: reg.id, skewMs, maxSkewMs: reg.maxClockSkewMs,
    });
  }
  const values = {
    url: reg.url, state: 'active', lease_expires_at: now + reg.leaseMs, last_heartbeat_at: now, started_at: now, memory_mb: reg.capacity.memoryMB, cpus: reg.capacity.cpus,
    slots: reg.capacity.slots, running_sandboxes: 0, memory_reserved_mb: 0, cached_images: JSON.stringify(reg.cachedImageIds), pending_uploads: JSON.stringify(reg.pendingUploadIds),
    ingress_address: reg.ingressAddress ?? null, ssh_address: reg.sshAddress ?? null,
  };
  await db.insertInto('hosts').values({ id: reg.id, ...values }).onConflict((oc) => oc.column('id').doUpdateSet(values)).execute();
  return (await getHost(db, reg.id)) as HostRecord;
}

/** @throws RamifyError HOST_NOT_FOUND; HOST_LOST when the row is `gone`. */
export async function heartbeatHost(db: Executor, id: string, hb: HostHeartbeat): Promise<HostRecord> {
  const now = await databaseNow(db);
  const row = await db.updateTable('hosts').set({
    lease_expires_at: now + hb.leaseMs, last_heartbeat_at: now, running_sandboxes: hb.load.runningSandboxes, memory_reserved_mb: hb.load.memoryReservedMB,
    cached_images: JSON.stringify(hb.cachedImageIds), pending_uploads: JSON.stringify(hb.pendingUploadIds),
  }).where('id', '=', id).where('state', '!=', 'gone').returningAll().executeTakeFirst();
  if (row) return hostFromRow(row);
  const host = await getHost(db, id);
  if (!host) throw new RamifyError('HOST_NOT_FOUND', `host ${quote(id)} is not registered`, { hostId: id });
  throw new RamifyError('HOST_LOST', `host '${id}' lost its lease (no heartbeat since ${new Date(host.lastHeartbeatAt).toISOString()}) and was written off: register again`, { hostId: id });
}

/** @throws RamifyError HOST_NOT_FOUND. */
export async function setHostState(db: Executor, id: string, state: HostState): Promise<HostRecord> {
  const row = await db.updateTable('hosts').set({ state }).where('id', '=', id).returningAll().executeTakeFirst();
  if (!row) throw new RamifyError('HOST_NOT_FOUND', `host ${quote(id)} is not registered`, { hostId: id });
  return hostFromRow(row);
}

interface Load { memoryMB: number; cpus: number; slots: number }

/** Host `hostId`'s load from the store's rows: occupying sandboxes, slots, live reservations (each holding `sandboxes` slots). */
async function loadOf(db: Executor, hostId: string, now: number): Promise<Load> {
  const sbx = await db.selectFrom('sandboxes').select((eb) => [eb.fn.coalesce(eb.fn.sum<number>('memory_mb'), sql<number>`0`).as('mem'), eb.fn.coalesce(eb.fn.sum<number>('cpu_count'), sql<number>`0`).as('cpus')])
    .where('host_id', '=', hostId).where('state', 'in', OCCUPYING).executeTakeFirstOrThrow();
  const res = await db.selectFrom('host_reservations').select((eb) => [eb.fn.coalesce(eb.fn.sum<number>('memory_mb'), sql<number>`0`).as('mem'), eb.fn.coalesce(eb.fn.sum<number>('cpus'), sql<number>`0`).as('cpus'), eb.fn.coalesce(eb.fn.sum<number>('sandboxes'), sql<number>`0`).as('n')])
    .where('host_id', '=', hostId).where('expires_at', '>', now).executeTakeFirstOrThrow();
  const slots = await db.selectFrom('slots').select((eb) => eb.fn.countAll<number>().as('n')).where('host_id', '=', hostId).executeTakeFirstOrThrow();
  return { memoryMB: Number(sbx.mem) + Number(res.mem), cpus: Number(sbx.cpus) + Number(res.cpus), slots: Number(slots.n) + Number(res.n) };
}

/** What `req` holds in all: `count` sandboxes (default 1) of its memory and CPUs, one slot each. */
const needOf = (req: PlacementRequest): Load => {
  const n = req.count ?? 1;
  return { memoryMB: req.memoryMB * n, cpus: req.cpus * n, slots: n };
};

const fits = (h: HostRecord, load: Load, need: Load): boolean =>
  load.memoryMB + need.memoryMB <= h.capacity.memoryMB && load.cpus + need.cpus <= h.capacity.cpus && load.slots + need.slots <= h.capacity.slots;

/** Lock host `id`'s row for this transaction (Postgres); `skip`: give up (false) when another holds it. */
async function lockHost(trx: Executor, id: string, mode: 'skip-locked' | 'wait'): Promise<boolean> {
  if (dialectOf(trx) !== 'postgres') return true;
  const q = trx.selectFrom('hosts').select('id').where('id', '=', id).forUpdate();
  return (await (mode === 'skip-locked' ? q.skipLocked() : q).executeTakeFirst()) !== undefined;
}

/** See `HostRegistry.reserveHost`. @throws RamifyError NO_HOST_CAPACITY. */
export async function reserveHost(db: Executor, req: PlacementRequest, random: () => number = Math.random): Promise<PlacementReservation> {
  // A placement may hold one host's lock (it did not fit) while it waits for another's: Postgres then breaks
  // a cycle of such waits with a deadlock error (SQLSTATE 40P01), and the placement simply runs again.
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await reserveOnce(db, req, random);
    } catch (err) {
      if ((err as { code?: string }).code !== '40P01' || attempt >= 5 || db.isTransaction) throw err;
    }
  }
}

async function reserveOnce(db: Executor, req: PlacementRequest, random: () => number): Promise<PlacementReservation> {
  return inTransaction(db, async (trx) => {
    const now = await databaseNow(trx);
    const need = needOf(req);
    let q = trx.selectFrom('hosts').selectAll().where('state', '=', 'active').where('lease_expires_at', '>', now);
    if (req.hostId !== undefined) q = q.where('id', '=', req.hostId);
    const live = (await q.orderBy('id').execute()).map(hostFromRow);
    const loads = new Map<string, Load>();
    for (const h of live) loads.set(h.id, await loadOf(trx, h.id, now));
    const candidates = rankHosts(live.filter((h) => fits(h, loads.get(h.id) as Load, need)), loads, req, random);
    for (const mode of ['skip-locked', 'wait'] as const) {
      for (const host of candidates) {
        if (!(await lockHost(trx, host.id, mode))) continue;
        // Counted again under the lock: a reservation committed meanwhile by another process is seen now.
        const load = await loadOf(trx, host.id, await databaseNow(trx));
        loads.set(host.id, load);
        if (!fits(host, load, need)) continue;
        const expiresAt = now + req.ttlMs;
        await trx.insertInto('host_reservations').values({ id: req.reservationId, host_id: host.id, memory_mb: need.memoryMB, cpus: need.cpus, sandboxes: need.slots, expires_at: expiresAt }).execute();
        return { id: req.reservationId, hostId: host.id, url: host.url, memoryMB: need.memoryMB, cpus: need.cpus, sandboxes: need.slots, expiresAt };
      }
      if (dialectOf(trx) !== 'postgres') break;
    }
    if (req.hostId !== undefined) throw await noRoomOn(trx, req, need, live[0] === undefined ? null : { host: live[0], load: loads.get(live[0].id) as Load });
    throw new RamifyError('NO_HOST_CAPACITY', `no active host has room for ${req.memoryMB} MiB and ${req.cpus} CPU: ${live.length} live host(s); retry later or add a host`, {
      hosts: live.length, memoryMB: req.memoryMB, cpus: req.cpus,
    });
  });
}

/**
 * The refusal of a placement only host `req.hostId` may take (a fork's children): it is not an active live
 * host, or it lacks room; the message names the host and what is missing.
 */
async function noRoomOn(trx: Executor, req: PlacementRequest, need: Load, active: { host: HostRecord; load: Load } | null): Promise<RamifyError> {
  const hostId = req.hostId as string;
  const what = need.slots === 1 ? `${need.memoryMB} MiB and ${need.cpus} CPU` : `${need.slots} sandboxes of ${req.memoryMB} MiB and ${req.cpus} CPU (${need.memoryMB} MiB, ${need.cpus} CPU, ${need.slots} slots in all)`;
  const details = { hostId, hosts: active ? 1 : 0, memoryMB: need.memoryMB, cpus: need.cpus, sandboxes: need.slots };
  if (active === null) {
    const host = await getHost(trx, hostId);
    const why = host === null ? 'is not registered' : host.state !== 'active' ? `is ${host.state}` : 'stopped heartbeating';
    return new RamifyError('NO_HOST_CAPACITY', `host '${hostId}' ${why}: it takes no new sandboxes, so it has no room for ${what}`, { ...details, missing: [] });
  }
  const { host, load } = active;
  const free = { memoryMB: host.capacity.memoryMB - load.memoryMB, cpus: host.capacity.cpus - load.cpus, slots: host.capacity.slots - load.slots };
  const missing = [
    ...(need.memoryMB > free.memoryMB ? [`memory: ${Math.max(0, free.memoryMB)} MiB free of ${host.capacity.memoryMB}`] : []),
    ...(need.cpus > free.cpus ? [`CPUs: ${Math.max(0, free.cpus)} free of ${host.capacity.cpus}`] : []),
    ...(need.slots > free.slots ? [`network slots: ${Math.max(0, free.slots)} free of ${host.capacity.slots}`] : []),
  ];
  return new RamifyError('NO_HOST_CAPACITY', `host '${hostId}' has no room for ${what}: ${missing.join('; ') || 'taken by another placement meanwhile'}; retry later with fewer, or free some`, {
    ...details, missing: missing.map((m) => m.split(':')[0] as string),
  });
}

/**
 * Placement's choice among fitting hosts, best first: `sampleSize` (default 3) sampled at random, least
 * loaded by memory fraction first, a host caching `req.imageId` first among equally loaded ones; then the
 * rest in the same order. The cache only breaks ties: preferring it outright put every create on the one
 * host that had the template until it was full, instead of spreading them.
 */
export function rankHosts(fitting: HostRecord[], loads: Map<string, Load>, req: PlacementRequest, random: () => number): HostRecord[] {
  const frac = (h: HostRecord): number => (loads.get(h.id)?.memoryMB ?? 0) / Math.max(1, h.capacity.memoryMB);
  const caches = (h: HostRecord): number => (req.imageId !== null && h.cachedImageIds.includes(req.imageId) ? 0 : 1);
  const better = (a: HostRecord, b: HostRecord): number => frac(a) - frac(b) || caches(a) - caches(b);
  const k = req.sampleSize ?? 3;
  const shuffled = fitting.map((h) => ({ h, r: random() })).sort((a, b) => a.r - b.r).map((x) => x.h);
  return [...shuffled.slice(0, k).sort(better), ...shuffled.slice(k).sort(better)];
}

export async function getReservation(db: Executor, id: string): Promise<PlacementReservation | null> {
  const now = await databaseNow(db);
  const r = await db.selectFrom('host_reservations').innerJoin('hosts', 'hosts.id', 'host_reservations.host_id')
    .select(['host_reservations.id', 'host_reservations.host_id', 'hosts.url', 'host_reservations.memory_mb', 'host_reservations.cpus', 'host_reservations.sandboxes', 'host_reservations.expires_at'])
    .where('host_reservations.id', '=', id).where('host_reservations.expires_at', '>', now).executeTakeFirst();
  return r ? { id: r.id, hostId: r.host_id, url: r.url, memoryMB: Number(r.memory_mb), cpus: Number(r.cpus), sandboxes: Number(r.sandboxes), expiresAt: Number(r.expires_at) } : null;
}

export async function releaseReservation(db: Executor, id: string): Promise<void> {
  await db.deleteFrom('host_reservations').where('id', '=', id).execute();
}

/** See `HostRegistry.clusterSecret`: the first caller's `made` is stored; every caller reads the stored one. */
export async function clusterSecret(db: Executor, name: string, made: string): Promise<string> {
  await db.insertInto('cluster_secrets').values({ name, value: made }).onConflict((oc) => oc.column('name').doNothing()).execute();
  const row = await db.selectFrom('cluster_secrets').select('value').where('name', '=', name).executeTakeFirstOrThrow();
  return row.value;
}

/** See `HostRegistry.expireHosts`: one transaction; rows locked by another sweeper are skipped (Postgres). */
export async function expireHosts(db: Executor): Promise<LostHost[]> {
  return inTransaction(db, async (trx) => {
    const now = await databaseNow(trx);
    let q = trx.selectFrom('hosts').selectAll().where('state', '!=', 'gone').where('lease_expires_at', '<=', now).orderBy('id');
    if (dialectOf(trx) === 'postgres') q = q.forUpdate().skipLocked();
    const expired = (await q.execute()).map(hostFromRow);
    const lost: LostHost[] = [];
    for (const host of expired) {
      await trx.updateTable('hosts').set({ state: 'gone' }).where('id', '=', host.id).execute();
      await trx.deleteFrom('host_reservations').where('host_id', '=', host.id).execute();
      const reason = `HOST_LOST: host '${host.id}' stopped heartbeating (last at ${new Date(host.lastHeartbeatAt).toISOString()}); the sandbox's memory and processes were on it`;
      const before = await trx.selectFrom('sandboxes').select(['id', 'state']).where('host_id', '=', host.id).where('state', 'in', LOST_ON_HOST_LOSS).execute();
      if (before.length > 0) {
        await trx.updateTable('sandboxes').set({ state: 'error', error: reason, operation: null, updated_at: now }).where('id', 'in', before.map((r) => r.id)).execute();
      }
      lost.push({
        hostId: host.id, lostSandboxIds: before.map((r) => r.id).sort(), previousStates: Object.fromEntries(before.map((r) => [r.id, r.state as SandboxState])),
      });
    }
    return lost;
  });
}
