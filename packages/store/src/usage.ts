/**
 * Metering rows (migration 19): each sandbox's meter (`sandbox_meters`: how far its time and counters are
 * written) and its amounts per UTC hour (`usage_hours`). A write adds to hour rows (the peak is maxed) and
 * sets only the meter columns it names, so the sampler's counter writes and the lifecycle's time writes of
 * one sandbox never overwrite each other. Sums are per sandbox (and per UTC day); core groups them further.
 */
import type { SandboxMeterRecord, UsageAmounts, UsageSum, UsageSumQuery, UsageWrite } from '@ramify/core';
import { sql, type Selectable } from 'kysely';
import { inTransaction, type DialectName, type Executor, type SandboxMetersTable } from './schema.js';

type MeterRow = Selectable<SandboxMetersTable>;

const METER_COLUMNS: Record<keyof Omit<SandboxMeterRecord, 'sandboxId'>, keyof MeterRow> = {
  timeAt: 'time_at',
  sampledAt: 'sampled_at',
  instance: 'instance',
  cpuUs: 'cpu_us',
  netInBytes: 'net_in_bytes',
  netOutBytes: 'net_out_bytes',
};

type AddedColumn = 'running_ms' | 'paused_ms' | 'cpu_us' | 'memory_mib_ms' | 'disk_byte_ms' | 'net_in_bytes' | 'net_out_bytes';

/** Hour columns that add up, by amount name (the peak is a maximum). */
const ADDED: ReadonlyArray<[Exclude<keyof UsageAmounts, 'memoryPeakBytes'>, AddedColumn]> = [
  ['runningMs', 'running_ms'],
  ['pausedMs', 'paused_ms'],
  ['cpuUs', 'cpu_us'],
  ['memoryMiBMs', 'memory_mib_ms'],
  ['diskByteMs', 'disk_byte_ms'],
  ['netInBytes', 'net_in_bytes'],
  ['netOutBytes', 'net_out_bytes'],
];

const meterFromRow = (r: MeterRow): SandboxMeterRecord => ({
  sandboxId: r.sandbox_id,
  timeAt: r.time_at,
  sampledAt: r.sampled_at,
  instance: r.instance,
  cpuUs: r.cpu_us,
  netInBytes: r.net_in_bytes,
  netOutBytes: r.net_out_bytes,
});

/** The meters of these sandboxes (absent ones have none yet). */
export async function getMeters(db: Executor, ids: readonly string[]): Promise<SandboxMeterRecord[]> {
  if (ids.length === 0) return [];
  const rows = new Map((await db.selectFrom('sandbox_meters').selectAll().where('sandbox_id', 'in', ids).execute()).map((r) => [r.sandbox_id, r]));
  return ids.flatMap((id) => {
    const row = rows.get(id);
    return row ? [meterFromRow(row)] : [];
  });
}

/** Apply the writes in one transaction; unknown sandboxes are skipped. */
export async function recordUsage(db: Executor, writes: readonly UsageWrite[]): Promise<void> {
  if (writes.length === 0) return;
  await inTransaction(db, async (trx) => {
    for (const w of writes) {
      const sandbox = await trx.selectFrom('sandboxes').select('created_at').where('id', '=', w.sandboxId).executeTakeFirst();
      if (!sandbox) continue;
      for (const h of w.hours) await addHour(trx, w.sandboxId, h);
      await setMeter(trx, w.sandboxId, w.meter, sandbox.created_at);
    }
  });
}

/** Add the amounts to the sandbox's hour row (the peak is maxed), creating it when absent. */
async function addHour(db: Executor, sandboxId: string, h: UsageWrite['hours'][number]): Promise<void> {
  const amounts = Object.fromEntries(ADDED.map(([k, c]) => [c, h[k] ?? 0])) as Record<AddedColumn, number>;
  const peak = h.memoryPeakBytes ?? 0;
  await db
    .insertInto('usage_hours')
    .values({ sandbox_id: sandboxId, hour: h.hour, ...amounts, memory_peak_bytes: peak })
    .onConflict((oc) =>
      oc.columns(['sandbox_id', 'hour']).doUpdateSet((eb) => ({
        ...Object.fromEntries(ADDED.map(([, c]) => [c, eb(`usage_hours.${c}`, '+', eb.ref(`excluded.${c}`))])),
        // The new peak by reference, not by value: a value here is inlined into the SQL text, which made
        // every write a statement of its own (prepared again, and crowding the statement cache).
        memory_peak_bytes: eb
          .case()
          .when('usage_hours.memory_peak_bytes', '<', eb.ref('excluded.memory_peak_bytes'))
          .then(eb.ref('excluded.memory_peak_bytes'))
          .else(eb.ref('usage_hours.memory_peak_bytes'))
          .end(),
      })),
    )
    .execute();
}

/** Set the meter columns the write names; a new meter's time starts at the time given, else at the sandbox's creation. */
async function setMeter(db: Executor, sandboxId: string, meter: UsageWrite['meter'], createdAt: number): Promise<void> {
  const set: Partial<Omit<MeterRow, 'sandbox_id'>> = {};
  for (const f of Object.keys(meter) as Array<keyof typeof METER_COLUMNS>) {
    if (meter[f] !== undefined && f in METER_COLUMNS) (set as Record<string, unknown>)[METER_COLUMNS[f]] = meter[f];
  }
  if (Object.keys(set).length === 0) return;
  await db
    .insertInto('sandbox_meters')
    .values({ sandbox_id: sandboxId, ...set, time_at: meter.timeAt ?? createdAt })
    .onConflict((oc) => oc.column('sandbox_id').doUpdateSet(set))
    .execute();
}

/** The UTC day (`YYYY-MM-DD`) of an hour column holding ms: the one expression the two databases spell differently. */
const utcDay = (dialect: DialectName) =>
  dialect === 'postgres' ? sql<string>`to_char(to_timestamp(u.hour / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')` : sql<string>`strftime('%Y-%m-%d', u.hour / 1000, 'unixepoch')`;

/** Amounts per sandbox (and per UTC day when `byDay`) in the query's hours, ordered by sandbox id and day. */
export async function sumUsage(db: Executor, dialect: DialectName, q: UsageSumQuery): Promise<UsageSum[]> {
  if (q.sandboxIds !== undefined && q.sandboxIds.length === 0) return [];
  const day = q.byDay ? utcDay(dialect) : sql<string | null>`NULL`;
  let query = db
    .selectFrom('usage_hours as u')
    .innerJoin('sandboxes as s', 's.id', 'u.sandbox_id')
    .select((eb) => [
      'u.sandbox_id',
      eb.fn.max('s.template_id').as('template_id'),
      eb.fn.max('s.team_id').as('team_id'),
      day.as('day'),
      ...ADDED.map(([, c]) => eb.fn.sum<number>(`u.${c}`).as(c)),
      eb.fn.max('u.memory_peak_bytes').as('memory_peak_bytes'),
    ])
    .where('u.hour', '>=', q.fromHour)
    .where('u.hour', '<', q.toHour);
  if (q.teamId !== undefined) query = query.where('s.team_id', '=', q.teamId);
  if (q.sandboxIds !== undefined) query = query.where('u.sandbox_id', 'in', q.sandboxIds);
  const grouped = q.byDay ? query.groupBy(['u.sandbox_id', day]).orderBy('u.sandbox_id').orderBy(day) : query.groupBy('u.sandbox_id').orderBy('u.sandbox_id');
  const rows = await grouped.execute();
  return rows.map((r) => {
    const row = r as unknown as Record<string, number | string | null>;
    const sum = { sandboxId: String(r.sandbox_id), templateId: String(r.template_id), teamId: String(r.team_id), day: r.day === null ? null : String(r.day), memoryPeakBytes: Number(r.memory_peak_bytes) } as UsageSum;
    for (const [k, c] of ADDED) sum[k] = Number(row[c]);
    return sum;
  });
}
