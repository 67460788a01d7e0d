/**
 * Plain validation messages: a zod v4 error map and the issue list the API's `VALIDATION_FAILED` answers
 * carry. Each message names what is allowed and what was received, in words a client can act on:
 * `must be an integer from 1 to 9007199254740991, got 'abc'`, `must be one of true, false, got 'yes'`,
 * `must be an integer from 128 to 65536, got the string '512'`, `required`,
 * `unknown field 'colour' (allowed: limit, state)`. A message a schema states itself
 * (`z.number({ error: ... })`, `.regex(re, message)`) wins over these: zod asks the schema first.
 * Received strings are quoted and cut to {@link MAX_QUOTED_CHARS}; one message per field. A check a
 * use-case makes by hand answers in the same layout through {@link invalidField}.
 * Mechanism: docs/design/ARCHITECTURE.md, "Validation messages".
 */
import { z } from 'zod';
import { RamifyError } from './errors.js';
import { MAX_QUOTED_CHARS, quote, truncate } from './quote.js';

export { MAX_QUOTED_CHARS, quote, truncate } from './quote.js';
/** Most unknown field names one message lists. */
const MAX_LISTED_KEYS = 5;

/** One offending field: its dotted path (`body.ports.0`) and what is wrong with it. */
export interface PlainIssue {
  path: string;
  message: string;
}

type RawIssue = z.core.$ZodRawIssue;
type Issue = z.core.$ZodIssue;

/** The parts of a JSON Schema the messages read (zod's `toJSONSchema` of the schema that owns an issue). */
interface Shape {
  type?: string | string[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number | boolean;
  exclusiveMaximum?: number | boolean;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
  enum?: unknown[];
  const?: unknown;
}

const shapes = new WeakMap<object, Shape>();

/** What `schema` accepts, as JSON Schema (cached per schema); `{}` when zod cannot say. */
function shapeOf(schema: z.core.$ZodType | undefined): Shape {
  if (!schema) return {};
  let shape = shapes.get(schema);
  if (!shape) {
    try {
      shape = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Shape;
    } catch {
      shape = {};
    }
    shapes.set(schema, shape);
  }
  return shape;
}

const TYPE_WORDS: Record<string, string> = {
  string: 'a string', number: 'a number', int: 'an integer', integer: 'an integer', boolean: 'true or false',
  array: 'an array', object: 'an object', record: 'an object', null: 'null', bigint: 'an integer', date: 'a date',
};

/**
 * A received value of the wrong type, as a message names it: its type and, for a scalar, the value
 * (`the string '512'`, quoted and cut; `the number 5`; `true`; `null`); `an array`, `an object`.
 */
function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  switch (typeof value) {
    case 'string': return `the string ${quote(value)}`;
    case 'number': return Number.isNaN(value) ? 'a value that is not a number' : `the number ${value}`;
    case 'boolean': return String(value);
    case 'object': return 'an object';
    default: return typeof value;
  }
}

const count = (n: number, unit: string): string => `${n} ${unit}${n === 1 ? '' : 's'}`;

/** `from 1 to 10`, `of at least 1`, `greater than 0`, ... for a number's bounds (integer bounds made inclusive). */
function numberRange(shape: Shape, int: boolean, bounded: boolean): string {
  let min = typeof shape.minimum === 'number' ? shape.minimum : undefined;
  let max = typeof shape.maximum === 'number' ? shape.maximum : undefined;
  let exMin = typeof shape.exclusiveMinimum === 'number' ? shape.exclusiveMinimum : undefined;
  let exMax = typeof shape.exclusiveMaximum === 'number' ? shape.exclusiveMaximum : undefined;
  if (int) {
    if (exMin !== undefined) [min, exMin] = [Math.max(min ?? -Infinity, Math.floor(exMin) + 1), undefined];
    if (exMax !== undefined) [max, exMax] = [Math.min(max ?? Infinity, Math.ceil(exMax) - 1), undefined];
    // z.int() alone bounds to the safe range: not worth saying unless the value is out of it.
    if (!bounded && min === Number.MIN_SAFE_INTEGER && max === Number.MAX_SAFE_INTEGER) return '';
  }
  if (min !== undefined && max !== undefined) return min === max ? ` equal to ${min}` : ` from ${min} to ${max}`;
  const low = min !== undefined ? `at least ${min}` : exMin !== undefined ? `greater than ${exMin}` : '';
  const high = max !== undefined ? `at most ${max}` : exMax !== undefined ? `less than ${exMax}` : '';
  if (low && high) return ` ${low} and ${high}`;
  return low || high ? ` of ${low || high}` : '';
}

/** `of 1 to 128 characters` and the like for a length's bounds. */
function lengthRange(min: number | undefined, max: number | undefined, unit: string): string {
  if (min !== undefined && min > 0 && max !== undefined) return min === max ? ` of exactly ${count(min, unit)}` : ` of ${min} to ${max} ${unit}s`;
  if (max !== undefined) return ` of at most ${count(max, unit)}`;
  if (min !== undefined && min > 1) return ` of at least ${count(min, unit)}`;
  return '';
}

const FORMAT_WORDS: Record<string, string> = {
  uri: 'a URL', url: 'a URL', email: 'an email address', uuid: 'a UUID', 'date-time': 'a date and time (ISO 8601)',
  date: 'a date (YYYY-MM-DD)', ipv4: 'an IPv4 address', ipv6: 'an IPv6 address', hostname: 'a host name',
};

/** What the schema owning `iss` accepts, as the words after `must be`; `bounded`: the issue is a bound. */
function expected(iss: RawIssue, bounded: boolean): string {
  const shape = shapeOf(iss.schema);
  if (shape.enum) return shape.enum.length === 1 ? String(shape.enum[0]) : `one of ${shape.enum.map(String).join(', ')}`;
  if ('const' in shape) return String(shape.const);
  const type = Array.isArray(shape.type) ? undefined : shape.type;
  switch (type) {
    case 'integer': return `an integer${numberRange(shape, true, bounded)}`;
    case 'number': return `a number${numberRange(shape, false, bounded)}`;
    case 'string': {
      if (shape.format && FORMAT_WORDS[shape.format]) return FORMAT_WORDS[shape.format]!;
      if (shape.minLength === 1 && shape.maxLength === undefined) return 'a non-empty string';
      return `a string${lengthRange(shape.minLength, shape.maxLength, 'character')}`;
    }
    case 'array': return shape.minItems === 1 && shape.maxItems === undefined ? 'a non-empty array' : `an array${lengthRange(shape.minItems, shape.maxItems, 'item')}`;
    case 'boolean': return 'true or false';
    case 'object': return 'an object';
    case 'null': return 'null';
  }
  const word = 'expected' in iss && typeof iss.expected === 'string' ? TYPE_WORDS[iss.expected] : undefined;
  return word ?? 'a valid value';
}

/** The value at `path` inside `root`, or undefined. */
function at(root: unknown, path: readonly PropertyKey[] | undefined): unknown {
  let node = root;
  for (const part of path ?? []) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<PropertyKey, unknown>)[part];
  }
  return node;
}

/**
 * How a message names the received `input`: the value itself when it has the expected kind (a number
 * out of range, a string not in the list), its kind and value otherwise (`the string '512'` where a
 * number belongs, see {@link kindOf}), its length for a length bound. A query string coerced to a number is quoted as sent (`'abc'`, not NaN).
 */
function received(iss: RawIssue, root: unknown, sameKind: boolean, length: boolean): string {
  const input = iss.input;
  if (typeof input === 'number') {
    const sent = at(root, iss.path);
    if (typeof sent === 'string' && Object.is(Number(sent), input) && sent !== String(input)) return quote(sent);
    if (Number.isNaN(input)) return 'a value that is not a number';
    return sameKind ? String(input) : kindOf(input);
  }
  if (typeof input === 'string') {
    if (length) return input.length === 0 ? 'an empty string' : count(Array.from(input).length, 'character');
    return sameKind ? quote(input) : kindOf(input);
  }
  if (Array.isArray(input) && length) return count(input.length, 'item');
  return kindOf(input);
}

/** Whether `input` is of the kind `shape` accepts (a number for a number): a wrong value rather than a wrong kind. */
function kindFits(shape: Shape, input: unknown): boolean {
  if (shape.enum) return shape.enum.some((v) => typeof v === typeof input);
  if ('const' in shape) return typeof shape.const === typeof input;
  const type = Array.isArray(shape.type) ? undefined : shape.type;
  if (type === 'integer' || type === 'number') return typeof input === 'number';
  if (type === 'string') return typeof input === 'string';
  if (type === 'array') return Array.isArray(input);
  return false;
}

/**
 * A check's own message in the map's words, for a rule JSON Schema cannot say plainly (a pattern):
 * `.regex(re, mustBe('a team id: 1-63 ...'))` reads `must be a team id: 1-63 ..., got 'Acme'`.
 */
export function mustBe(rule: string): { error: z.core.$ZodErrorMap } {
  return { error: (iss) => `must be ${rule}, got ${typeof iss.input === 'string' ? quote(iss.input) : kindOf(iss.input)}` };
}

/** `'a', 'b' and 3 more`: user-supplied names, quoted and cut, at most {@link MAX_LISTED_KEYS}. */
function listKeys(keys: readonly string[]): string {
  const shown = keys.slice(0, MAX_LISTED_KEYS).map(quote).join(', ');
  return keys.length > MAX_LISTED_KEYS ? `${shown} and ${keys.length - MAX_LISTED_KEYS} more` : shown;
}

/** The message for a union no alternative of which took the value. */
function unionMessage(iss: Extract<RawIssue, { code: 'invalid_union' }>, root: unknown): string {
  if (iss.discriminator !== undefined) {
    const value = at(iss.input, [iss.discriminator]);
    if (value === undefined) return 'required';
    const options: unknown[] = Array.isArray(iss.options) ? iss.options : [];
    return `must be one of ${options.map(String).join(', ')}, got ${typeof value === 'string' ? quote(value) : kindOf(value)}`;
  }
  if (iss.inclusive === false) return 'matches more than one of the allowed forms';
  const kinds = iss.errors.map((branch) => branch.find((i) => i.code === 'invalid_type' && i.path.length === 0));
  if (iss.errors.length > 0 && kinds.every(Boolean)) {
    const words = [...new Set(kinds.map((i) => TYPE_WORDS[(i as { expected: string }).expected] ?? (i as { expected: string }).expected))];
    return `must be ${words.join(' or ')}, got ${received(iss, root, false, false)}`;
  }
  return 'does not match any of the allowed forms';
}

/** The parts of a zod schema's definition the nullable walk reads. */
interface Def {
  type: string;
  innerType?: z.core.$ZodType;
  in?: z.core.$ZodType;
  shape?: Record<string, z.core.$ZodType>;
  element?: z.core.$ZodType;
  valueType?: z.core.$ZodType;
  items?: z.core.$ZodType[];
  getter?: () => z.core.$ZodType;
}

/** Wrappers that hand a value to their inner schema unchanged (for the walk's purpose). */
const PASS_THROUGH = new Set(['optional', 'default', 'prefault', 'readonly', 'catch', 'nonoptional']);
/** Most wrappers the walk unwraps around one field (a bound against a pathological schema). */
const MAX_WRAPPERS = 32;

/**
 * Whether the field at `path` of `schema` is `.nullable()` around `owner`, the schema that raised the
 * issue: zod raises the inner schema's issue, so the map cannot tell otherwise. A path the walk cannot
 * follow (into a union: its branches' paths are their own) or that lands elsewhere answers false.
 */
function nullableAt(schema: z.core.$ZodType, path: readonly PropertyKey[], owner: z.core.$ZodType | undefined): boolean {
  let node: z.core.$ZodType | undefined = schema;
  let nullable = false;
  const unwrap = (): void => {
    for (let i = 0; node && i < MAX_WRAPPERS; i++) {
      const def = node._zod.def as unknown as Def;
      if (def.type === 'nullable') [nullable, node] = [true, def.innerType];
      else if (PASS_THROUGH.has(def.type)) node = def.innerType;
      else if (def.type === 'pipe') node = def.in;
      else if (def.type === 'lazy' && def.getter) node = def.getter();
      else return;
    }
  };
  for (const part of path) {
    unwrap();
    if (!node) return false;
    const def: Def = node._zod.def as unknown as Def;
    node = def.type === 'object' ? def.shape?.[String(part)]
      : def.type === 'array' ? def.element
      : def.type === 'record' ? def.valueType
      : def.type === 'tuple' ? def.items?.[Number(part)]
      : undefined;
    nullable = false;
  }
  unwrap();
  return nullable && owner !== undefined && node === owner;
}

/**
 * A zod v4 error map (the `error` option of `safeParse`) with plain messages. `root` is the value being
 * parsed: a query value that zod coerced is quoted as the client sent it. `schema`, the schema parsing
 * `root`, lets a `.nullable()` field's message say so (`must be a number from 1 to 10, or null, got 0`).
 */
export function plainErrorMap(root: unknown, schema?: z.core.$ZodType): z.core.$ZodErrorMap {
  return (iss) => {
    const orNull = schema && nullableAt(schema, iss.path ?? [], iss.schema) ? ', or null' : '';
    switch (iss.code) {
      case 'invalid_type':
        if (iss.input === undefined) return 'required';
        return `must be ${expected(iss, false)}${orNull}, got ${received(iss, root, kindFits(shapeOf(iss.schema), iss.input), false)}`;
      case 'too_big':
      case 'too_small': {
        const length = iss.origin === 'string' || iss.origin === 'array' || iss.origin === 'set';
        return `must be ${expected(iss, true)}${orNull}, got ${received(iss, root, true, length)}`;
      }
      case 'not_multiple_of':
        return `must be a multiple of ${String(iss.divisor)}${orNull}, got ${received(iss, root, true, false)}`;
      case 'invalid_value':
        return `must be ${iss.values.length === 1 ? String(iss.values[0]) : `one of ${iss.values.map(String).join(', ')}`}${orNull}, got ${received(iss, root, iss.values.some((v) => typeof v === typeof iss.input), false)}`;
      case 'invalid_format':
        if (iss.format === 'regex' && iss.pattern) return `must match ${iss.pattern}${orNull}, got ${received(iss, root, true, false)}`;
        return `must be ${FORMAT_WORDS[iss.format] ?? `a valid ${iss.format}`}${orNull}, got ${received(iss, root, true, false)}`;
      case 'unrecognized_keys': {
        const known = iss.inst && 'shape' in iss.inst ? Object.keys((iss.inst as unknown as z.ZodObject).shape) : [];
        return `unknown field${iss.keys.length > 1 ? 's' : ''} ${listKeys(iss.keys)}${known.length ? ` (allowed: ${known.join(', ')})` : ''}`;
      }
      case 'invalid_key':
        return `not an allowed key: ${iss.issues[0]?.message ?? 'invalid'}`;
      case 'invalid_element':
        return `not an allowed element: ${iss.issues[0]?.message ?? 'invalid'}`;
      case 'invalid_union':
        return unionMessage(iss, root);
      default:
        return 'is not valid';
    }
  };
}

/**
 * Issues as the API reports them, one per field, each path prefixed by `where` (`body`, `query`):
 * a union that failed is reported as its closest alternative's issues (the one the value's kind fits,
 * with the fewest problems), and a field with several problems keeps its first. Path segments a client
 * chose (record keys) are cut like quoted strings.
 */
export function plainIssues(issues: readonly Issue[], where: string): PlainIssue[] {
  const seen = new Map<string, string>();
  const visit = (list: readonly Issue[], prefix: readonly PropertyKey[]): void => {
    for (const issue of list) {
      const path = [...prefix, ...issue.path];
      if (issue.code === 'invalid_union' && issue.errors.length > 0) {
        const fitting = issue.errors.filter((branch) => !branch.some((i) => i.code === 'invalid_type' && i.path.length === 0));
        const closest = fitting.reduce<Issue[] | undefined>((best, branch) => (!best || branch.length < best.length ? branch : best), undefined);
        if (closest) {
          visit(closest, path);
          continue;
        }
      }
      const key = [where, ...path.map((p) => truncate(String(p)))].join('.');
      if (!seen.has(key)) seen.set(key, issue.message);
    }
  };
  visit(issues, []);
  return [...seen].map(([path, message]) => ({ path, message }));
}

/**
 * A `VALIDATION_FAILED` (400) for one field a use-case checks by hand, in the layout {@link plainIssues}
 * gives a schema's: message `<path>: <problem>`, `details.issues` `[{ path, message: problem }]`. `path`
 * is dotted and names the request part (`query.state`, `body.quota.maxRunning`); `problem` says what is
 * allowed and, through {@link quote}, what was received. `extra` adds details (e.g. `field`, which older
 * clients read).
 */
export function invalidField(path: string, problem: string, extra: Record<string, unknown> = {}): RamifyError {
  return new RamifyError('VALIDATION_FAILED', `${path}: ${problem}`, { ...extra, issues: [{ path, message: problem }] });
}
