/**
 * Metering rows (migration 19): each sandbox's meter (`sandbox_meters`: how far its time and counters are
 * written) and its amounts per UTC hour (`usage_hours`). A write adds to hour rows (the peak is maxed) and
 * sets only the meter columns it names, so the sampler's counter writes and the lifecycle's time writes of
 * one sandbox never overwrite each other. Sums are per sandbox (and per UTC day); core groups them further.
 */
import type { SandboxMeterRecord, UsageAmounts, UsageSum, UsageSumQuery, UsageWrite } from '@ramify/core';
import type { Db } from './db.js';

interface MeterRow {
  sandbox_id: string;
  time_at: number;
  sampled_at: number | null;
  instance: string | null;
  cpu_us: number | null;
  net_in_bytes: number | null;
  net_out_bytes: number | null;
}

const METER_COLUMNS: Record<keyof Omit<SandboxMeterRecord, 'sandboxId'>, keyof MeterRow> = {
  timeAt: 'time_at',
  sampledAt: 'sampled_at',
  instance: 'instance',
  cpuUs: 'cpu_us',
  netInBytes: 'net_in_bytes',
  netOutBytes: 'net_out_bytes',
};

/** Hour columns that add up, by amount name (the peak is a maximum). */
const ADDED: ReadonlyArray<[keyof UsageAmounts, string]> = [
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

export class UsageRows {
  readonly #db: Db;
  readonly #hour;
  readonly #exists;

  constructor(db: Db) {
    this.#db = db;
    const cols = ADDED.map(([, c]) => c);
    this.#hour = db.prepare(
      `INSERT INTO usage_hours (sandbox_id, hour, ${cols.join(', ')}, memory_peak_bytes) VALUES (?, ?, ${cols.map(() => '?').join(', ')}, ?)
       ON CONFLICT (sandbox_id, hour) DO UPDATE SET ${cols.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')},
         memory_peak_bytes = MAX(memory_peak_bytes, excluded.memory_peak_bytes)`,
    );
    this.#exists = db.prepare('SELECT 1 FROM sandboxes WHERE id = ?');
  }

  meters(ids: readonly string[]): SandboxMeterRecord[] {
    const out: SandboxMeterRecord[] = [];
    const get = this.#db.prepare('SELECT * FROM sandbox_meters WHERE sandbox_id = ?');
    for (const id of ids) {
      const row = get.get(id) as MeterRow | undefined;
      if (row) out.push(meterFromRow(row));
    }
    return out;
  }

  /** Apply the writes in one transaction; unknown sandboxes are skipped. */
  record(writes: readonly UsageWrite[]): void {
    this.#db.transaction(() => {
      for (const w of writes) {
        if (!this.#exists.get(w.sandboxId)) continue;
        for (const h of w.hours) {
          this.#hour.run(w.sandboxId, h.hour, ...ADDED.map(([k]) => h[k] ?? 0), h.memoryPeakBytes ?? 0);
        }
        this.#setMeter(w.sandboxId, w.meter);
      }
    })();
  }

  #setMeter(sandboxId: string, meter: UsageWrite['meter']): void {
    const fields = (Object.keys(meter) as Array<keyof typeof METER_COLUMNS>).filter((f) => meter[f] !== undefined && f in METER_COLUMNS && f !== 'timeAt');
    const cols = fields.map((f) => METER_COLUMNS[f]);
    const sets = [...(meter.timeAt !== undefined ? ['time_at = excluded.time_at'] : []), ...cols.map((c) => `${c} = excluded.${c}`)];
    if (sets.length === 0) return;
    // A new meter's time starts at the time given, else at the sandbox's creation (nothing was written before).
    this.#db
      .prepare(
        `INSERT INTO sandbox_meters (sandbox_id, time_at${cols.map((c) => `, ${c}`).join('')})
         VALUES (?, COALESCE(?, (SELECT created_at FROM sandboxes WHERE id = ?))${cols.map(() => ', ?').join('')})
         ON CONFLICT (sandbox_id) DO UPDATE SET ${sets.join(', ')}`,
      )
      .run(sandboxId, meter.timeAt ?? null, sandboxId, ...fields.map((f) => meter[f]));
  }

  /** Amounts per sandbox (and per UTC day when `byDay`) in the query's hours, ordered by sandbox id and day. */
  sum(q: UsageSumQuery): UsageSum[] {
    const where = ['u.hour >= ?', 'u.hour < ?'];
    const params: unknown[] = [q.fromHour, q.toHour];
    if (q.teamId !== undefined) {
      where.push('s.team_id = ?');
      params.push(q.teamId);
    }
    if (q.sandboxIds !== undefined) {
      if (q.sandboxIds.length === 0) return [];
      where.push(`u.sandbox_id IN (${q.sandboxIds.map(() => '?').join(', ')})`);
      params.push(...q.sandboxIds);
    }
    const day = q.byDay ? "strftime('%Y-%m-%d', u.hour / 1000, 'unixepoch')" : 'NULL';
    const sql = `SELECT u.sandbox_id AS sandbox_id, s.template_id AS template_id, s.team_id AS team_id, ${day} AS day,
        ${ADDED.map(([, c]) => `SUM(u.${c}) AS ${c}`).join(', ')}, MAX(u.memory_peak_bytes) AS memory_peak_bytes
      FROM usage_hours u JOIN sandboxes s ON s.id = u.sandbox_id
      WHERE ${where.join(' AND ')} GROUP BY u.sandbox_id, day ORDER BY u.sandbox_id, day`;
    const rows = this.#db.prepare(sql).all(...params) as Array<Record<string, number | string | null>>;
    return rows.map((r) => {
      const sum = { sandboxId: String(r.sandbox_id), templateId: String(r.template_id), teamId: String(r.team_id), day: r.day === null ? null : String(r.day), memoryPeakBytes: Number(r.memory_peak_bytes) } as UsageSum;
      for (const [k, c] of ADDED) sum[k] = Number(r[c]);
      return sum;
    });
  }
}
