/**
 * Compiled queries kept per shape and database, for the hottest writes and reads (a sandbox's row by id,
 * its insert and patch, an event's append): kysely builds and compiles every query it runs, 4-13 µs each
 * here, which these skip. A shape is built once with placeholder values, compiled for the executor's
 * dialect, and run with each call's values put in their places (the SQL text, and so SQLite's prepared
 * statement, is the same every time). Executors whose dialect is unknown compile as usual.
 */
import { CompiledQuery, type Kysely, type QueryResult } from 'kysely';
import type { Database, DialectName, Executor } from './schema.js';

/** Where a call's value goes: the index of its column in the call's row. */
class Slot {
  constructor(readonly index: number) {}
}

const dialects = new WeakMap<Executor, DialectName>();
const compiled = new Map<string, { sql: string; parameters: readonly unknown[] }>();

/** Remember which database `db` talks to (the store's root executor, and each transaction opened from a known one). */
export function registerDialect(db: Executor, dialect: DialectName): void {
  dialects.set(db, dialect);
}

/** The dialect registered for `db`, if any. */
export function dialectOf(db: Executor): DialectName | undefined {
  return dialects.get(db);
}

/** Any table, seen loosely: the helpers below take table and column names the row modules give them. */
type Loose = Kysely<Record<string, Record<string, unknown>>>;

async function run<O>(db: Executor, shape: string, values: readonly unknown[], build: (value: (i: number) => unknown) => { compile(): CompiledQuery<O> }): Promise<QueryResult<O>> {
  const dialect = dialects.get(db);
  if (!dialect) return db.executeQuery(build((i) => values[i]).compile());
  const key = `${dialect}\u0000${shape}`;
  let query = compiled.get(key);
  if (!query) {
    const { sql, parameters } = build((i) => new Slot(i)).compile();
    compiled.set(key, (query = { sql, parameters }));
  }
  const parameters = query.parameters.map((p) => (p instanceof Slot ? values[p.index] : p));
  return db.executeQuery<O>(CompiledQuery.raw(query.sql, parameters));
}

/** INSERT of `rows` (all with the same columns, in the same order) into `table`, returning `returning` when given. */
export function insertRows<O = Record<string, unknown>>(db: Executor, table: keyof Database, rows: ReadonlyArray<Record<string, unknown>>, returning?: string): Promise<QueryResult<O>> {
  const columns = Object.keys(rows[0] ?? {});
  const values = rows.flatMap((r) => columns.map((c) => r[c]));
  const shape = `insert ${table} ${rows.length} ${columns.join(',')} ${returning ?? ''}`;
  return run<O>(db, shape, values, (value) => {
    const template = rows.map((_, r) => Object.fromEntries(columns.map((c, i) => [c, value(r * columns.length + i)])));
    const insert = (db as unknown as Loose).insertInto(table).values(template);
    return (returning ? insert.returning(returning) : insert) as unknown as { compile(): CompiledQuery<O> };
  });
}

/** UPDATE `table` SET `set` WHERE `key` = `id` RETURNING *: the updated row, or undefined when none matched. */
export async function updateById<R>(db: Executor, table: keyof Database, set: Record<string, unknown>, key: string, id: string): Promise<R | undefined> {
  const columns = Object.keys(set);
  const shape = `update ${table} ${columns.join(',')} ${key}`;
  const result = await run<R>(db, shape, [...columns.map((c) => set[c]), id], (value) =>
    (db as unknown as Loose)
      .updateTable(table)
      .set(Object.fromEntries(columns.map((c, i) => [c, value(i)])))
      .where(key, '=', value(columns.length))
      .returningAll() as unknown as { compile(): CompiledQuery<R> });
  return result.rows[0];
}

/** SELECT * FROM `table` WHERE `key` = `id`: the row, or undefined. */
export async function selectById<R>(db: Executor, table: keyof Database, key: string, id: string): Promise<R | undefined> {
  const result = await run<R>(db, `select ${table} ${key}`, [id], (value) =>
    (db as unknown as Loose).selectFrom(table).selectAll().where(key, '=', value(0)) as unknown as { compile(): CompiledQuery<R> });
  return result.rows[0];
}
