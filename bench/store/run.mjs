#!/usr/bin/env node
// bench/store: latency of the store's hottest writes through the Store port (kysely), next to the raw
// mechanism in the same run: a sandbox row created (the row and two metadata pairs, one transaction),
// a state transition (state, endAt and operation patched, the row returned: one UPDATE ... RETURNING), and an
// event appended (the team's event counter bumped and one insert, its seq returned: one transaction).
//   flock /tmp/ramify-real-tests.lock node bench/store/run.mjs [--iterations 2000]
// SQLite: SqliteStore (kysely's SQLite dialect over better-sqlite3) against the same statements prepared
// once on better-sqlite3 directly, with the same record mapping (what a hand-written store does), each
// on its own fresh file with the same schema and pragmas (WAL, synchronous=NORMAL); iterations alternate
// between the two in rounds of 100, so that the load of a shared machine drifts under both alike.
// Target: the store's median ≤ 1.5× raw's, per op.
// Postgres (when Debian's postgresql-15 is installed): a throwaway cluster on loopback with fsync and
// synchronous commits on (a durable server), the same three ops through openPostgresStore: absolute figures.
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openDatabase, openPostgresStore, SqliteStore } from '@ramify/store';
import { startPostgresCluster } from '@ramify/store/testsuite';
import { ok, quantile, timeMs } from '../support/stats.mjs';

const { values } = parseArgs({ options: { iterations: { type: 'string', default: '2000' } } });
const N = Number(values.iterations);
const ROUND = 100;
const TARGET = 1.5;
const dir = await mkdtemp(join(tmpdir(), 'ramify-bench-store-'));

const us = (ms) => `${(ms * 1000).toFixed(1)} µs`;

let seq = 0;
const sandbox = (prefix) => {
  seq += 1;
  const id = `sbx_${prefix}_${String(seq).padStart(10, '0')}`;
  return {
    id, teamId: 'default', state: 'creating', runtime: 'gvisor', templateId: 'tpl_bench', sourceSnapshotId: 'snap_tpl', rootfsDir: '/rootfs', parentId: null,
    cpuCount: 1, memoryMB: 512, diskSizeMB: null, metadata: { owner: 'bench', n: String(seq) }, envs: { A: '1' }, createdAt: Date.now(), timeoutMs: 300_000,
    onTimeout: 'pause', endAt: null, slot: null, pausedSnapshotId: null, error: null, operation: { kind: 'create' }, ingress: { ports: [], autoResume: null },
    autoPause: null, lastActiveAt: null,
  };
};
const transition = () => ({ state: 'running', endAt: Date.now() + 300_000, operation: null });
const event = (sandboxId) => ({ type: 'sandbox.lifecycle.created', at: Date.now(), teamId: 'default', sandboxId, keyId: 'key_bench', cause: 'api', data: { templateId: 'tpl_bench' } });

/** A sandbox row as the port returns it (what the store's mapping does: JSON columns parsed, names in camelCase). */
const record = (r) => ({
  id: r.id, teamId: r.team_id, state: r.state, runtime: r.runtime, templateId: r.template_id, sourceSnapshotId: r.source_snapshot_id, rootfsDir: r.rootfs_dir,
  parentId: r.parent_id, cpuCount: r.cpu_count, memoryMB: r.memory_mb, diskSizeMB: r.disk_size_mb, metadata: JSON.parse(r.metadata), envs: JSON.parse(r.envs),
  createdAt: r.created_at, timeoutMs: r.timeout_ms, onTimeout: r.on_timeout, endAt: r.end_at, slot: r.slot, pausedSnapshotId: r.paused_snapshot_id, error: r.error,
  operation: r.operation === null ? null : JSON.parse(r.operation), ingress: JSON.parse(r.ingress), autoPause: r.auto_pause === null ? null : JSON.parse(r.auto_pause),
  lastActiveAt: r.last_active_at,
});

/**
 * The same work on better-sqlite3 directly, as a hand-written store does it: statements prepared once,
 * the same transactions, the same JSON encoding of records and mapping of rows back to records.
 */
function rawSqlite(path) {
  const db = openDatabase(path);
  const cols = ['id', 'team_id', 'state', 'runtime', 'template_id', 'source_snapshot_id', 'rootfs_dir', 'parent_id', 'cpu_count', 'memory_mb', 'disk_size_mb', 'metadata', 'envs',
    'created_at', 'timeout_ms', 'on_timeout', 'end_at', 'slot', 'paused_snapshot_id', 'error', 'operation', 'ingress', 'auto_pause', 'last_active_at', 'updated_at'];
  const insert = db.prepare(`INSERT INTO sandboxes (${cols.join(', ')}) VALUES (${cols.map(() => '?').join(', ')})`);
  const meta = db.prepare('INSERT INTO sandbox_metadata (sandbox_id, key, value) VALUES (?, ?, ?)');
  const update = db.prepare('UPDATE sandboxes SET state = ?, end_at = ?, operation = ?, updated_at = ? WHERE id = ? RETURNING *');
  // The team's event counter, bumped in the append's transaction (packages/store/src/events.ts appendEvent).
  const bump = db.prepare('INSERT INTO event_sequences (team_id, last_seq) VALUES (?, 1) ON CONFLICT (team_id) DO UPDATE SET last_seq = event_sequences.last_seq + 1 RETURNING last_seq');
  const append = db.prepare('INSERT INTO events (type, at, team_id, team_seq, sandbox_id, key_id, cause, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq');
  const appendEvent = db.transaction((e) => append.get(e.type, e.at, e.teamId, bump.get(e.teamId).last_seq, e.sandboxId, e.keyId, e.cause, JSON.stringify(e.data)).seq);
  const create = db.transaction((r) => {
    insert.run(r.id, r.teamId, r.state, r.runtime, r.templateId, r.sourceSnapshotId, r.rootfsDir, r.parentId, r.cpuCount, r.memoryMB, r.diskSizeMB, JSON.stringify(r.metadata),
      JSON.stringify(r.envs), r.createdAt, r.timeoutMs, r.onTimeout, r.endAt, r.slot, r.pausedSnapshotId, r.error, JSON.stringify(r.operation), JSON.stringify(r.ingress), null, null, Date.now());
    for (const [k, v] of Object.entries(r.metadata)) meta.run(r.id, k, v);
  });
  const patch = (id, p) => record(update.get(p.state, p.endAt, p.operation === null ? null : JSON.stringify(p.operation), Date.now(), id));
  return {
    insertSandbox: (r) => create(r),
    updateSandbox: (id, p) => patch(id, p),
    appendEvent: (e) => appendEvent(e),
    close: () => db.close(),
  };
}

/** Run the three ops `n` times on each target, alternating in rounds; returns samples per target and op. */
async function measure(targets, n) {
  const samples = Object.fromEntries(Object.keys(targets).map((t) => [t, { create: [], transition: [], event: [] }]));
  for (let done = 0; done < n; done += ROUND) {
    for (const [name, target] of Object.entries(targets)) {
      const ids = [];
      for (let i = 0; i < ROUND; i++) {
        const r = sandbox(name);
        ids.push(r.id);
        samples[name].create.push(await timeMs(() => target.insertSandbox(r)));
      }
      for (const id of ids) samples[name].transition.push(await timeMs(() => target.updateSandbox(id, transition())));
      for (const id of ids) samples[name].event.push(await timeMs(() => target.appendEvent(event(id))));
    }
  }
  return samples;
}

console.log(`bench/store: ${N} iterations per op and target (load at start ${loadavg().map((l) => l.toFixed(2)).join(' ')})`);
let cluster = null;
try {
  const raw = rawSqlite(join(dir, 'raw.db'));
  const store = new SqliteStore({ path: join(dir, 'store.db') });
  // Warm both (statement caches, page cache) before measuring.
  await measure({ raw, store }, ROUND);
  const s = await measure({ raw, store }, N);
  raw.close();
  await store.close();
  console.log('\nSQLite (WAL, synchronous=NORMAL): median / p99');
  for (const op of ['create', 'transition', 'event']) {
    const [rm, km] = [quantile(s.raw[op], 0.5), quantile(s.store[op], 0.5)];
    const ratio = km / rm;
    console.log(`  ${op.padEnd(10)} raw better-sqlite3 ${us(rm)} / ${us(quantile(s.raw[op], 0.99))}   store (kysely) ${us(km)} / ${us(quantile(s.store[op], 0.99))}   ` +
      `ratio ${ratio.toFixed(2)}x (target <= ${TARGET}x: ${ok(ratio, TARGET)})`);
  }

  cluster = await startPostgresCluster({ durability: 'durable' });
  if ('skip' in cluster) {
    console.log(`\nPostgres: skipped (${cluster.skip})`);
    cluster = null;
  } else {
    const pg = await openPostgresStore({ url: await cluster.ensureDatabase('bench') });
    await measure({ pg }, ROUND);
    const p = await measure({ pg }, Math.min(N, 1000));
    await pg.close();
    console.log(`\n${cluster.name} (fsync on, synchronous_commit on, one client over loopback TCP): median / p99`);
    for (const op of ['create', 'transition', 'event']) console.log(`  ${op.padEnd(10)} store (kysely, pg) ${us(quantile(p.pg[op], 0.5))} / ${us(quantile(p.pg[op], 0.99))}`);
  }
} finally {
  cluster?.stop();
  await rm(dir, { recursive: true, force: true });
}
