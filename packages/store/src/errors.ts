/**
 * Constraint violations of either database, told apart by kind, so that each row module maps them to the
 * port's errors once for both: better-sqlite3's `SQLITE_CONSTRAINT_*` codes and Postgres's SQLSTATEs
 * (class 23, integrity constraint violation).
 */
import { RamifyError } from '@ramify/contracts';

/** What a write ran into; null: not a constraint violation. */
export type ConstraintKind = 'unique' | 'foreign-key' | 'check' | 'not-null' | 'other';

const SQLITE: Record<string, ConstraintKind> = {
  SQLITE_CONSTRAINT_UNIQUE: 'unique',
  SQLITE_CONSTRAINT_PRIMARYKEY: 'unique',
  SQLITE_CONSTRAINT_FOREIGNKEY: 'foreign-key',
  SQLITE_CONSTRAINT_CHECK: 'check',
  SQLITE_CONSTRAINT_NOTNULL: 'not-null',
};

const POSTGRES: Record<string, ConstraintKind> = {
  '23505': 'unique',
  '23503': 'foreign-key',
  '23514': 'check',
  '23502': 'not-null',
};

/** The kind of constraint `err` violated, or null for any other error. */
export function constraintKind(err: unknown): ConstraintKind | null {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return null;
  if (code.startsWith('SQLITE_CONSTRAINT')) return SQLITE[code] ?? 'other';
  if (/^23[0-9A-Z]{3}$/.test(code)) return POSTGRES[code] ?? 'other';
  return null;
}

/** Map any constraint violation to `CONFLICT` with `message`; rethrow anything else. */
export function conflictOnConstraint(err: unknown, message: string): never {
  if (constraintKind(err) !== null) throw new RamifyError('CONFLICT', message);
  throw err;
}

/** Rethrow `err` as `mapped` when it is a foreign key violation (the row it names is gone); otherwise as it is. */
export function onMissingParent(err: unknown, mapped: () => RamifyError): void {
  if (constraintKind(err) === 'foreign-key') throw mapped();
}
