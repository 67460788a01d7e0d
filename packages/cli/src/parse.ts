/** Parsers for option and argument values (commander `argParser`s); bad input is a usage error (exit 2). */
import { InvalidArgumentError } from 'commander';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `300000`, `500ms`, `30s`, `10m`, `2h`, `30d` → milliseconds (plain numbers are milliseconds). */
export function parseDuration(value: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError('expected a duration like 300000 (ms), 30s, 10m, 2h or 30d');
  return Math.round(Number(m[1]) * UNITS[m[2] ?? 'ms']);
}

/** A whole number in [min, max]. */
export function intIn(min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}`);
    return n;
  };
}

/** Repeatable `KEY=VALUE` option collected into a record. */
export function keyValue(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError('expected KEY=VALUE');
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

/** One of `choices`. */
export function oneOf<T extends string>(choices: readonly T[]): (value: string) => T {
  return (value) => {
    if (!(choices as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of: ${choices.join(', ')}`);
    return value as T;
  };
}

/**
 * A comma-separated list of `choices` (`gvisor,microvm`); repeating the option adds to the list.
 * Rejects (commander prints it) an empty list or a value outside `choices`.
 */
export function listOf<T extends string>(choices: readonly T[]): (value: string, previous: T[] | undefined) => T[] {
  const one = oneOf(choices);
  return (value, previous) => {
    const items = value.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
    if (items.length === 0) throw new InvalidArgumentError(`expected one or more of: ${choices.join(', ')}`);
    return [...(previous ?? []), ...items.map(one)];
  };
}

/** Quote one argument for `/bin/bash -c` (single quotes unless it is plainly safe). */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * The command line `exec` sends: one argument is taken as a shell command as-is
 * (`exec ID -- 'ls | wc -l'`); several are quoted one by one (`exec ID -- python3 -c 'print(1)'`).
 */
export function commandLine(argv: string[]): string {
  return argv.length === 1 ? argv[0] : argv.map(shellQuote).join(' ');
}

/**
 * A limit option's value as the API takes it: `none` → null (no limit). Option parsers return the string
 * `'none'` rather than null because commander turns a parser's null into `''`.
 */
export const noLimit = (v: number | 'none'): number | null => (v === 'none' ? null : v);
