/**
 * Template spec loading and validation. A spec file is YAML (`.yaml`/`.yml`, or anything not `.json`)
 * or JSON; it is validated strictly against `TemplateSpec` from `@ramify/contracts` plus the checks the
 * schema cannot make, and one error lists every problem found, each naming the file and the field
 * (`./t.yaml: files[0].path: ...; files[2].mode: ...`).
 *
 * YAML note: YAML 1.2 reads `0755` as the decimal 755. Because a decimal file mode is never what is
 * meant, a `files[].mode` written with a leading zero is read as octal (`0755` = 0o755), and one whose
 * digits are not all octal (`0999`) is refused rather than read as a decimal.
 */
import { RamifyError, TemplateSpec, plainErrorMap, type ErrorCode } from '@ramify/contracts';
import { readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { isMap, isScalar, isSeq, parseDocument } from 'yaml';
import type { z } from 'zod';

/** Largest host file `files[].source` may inline. */
export const MAX_SOURCE_FILE_BYTES = 64 * 1024 * 1024;

type SpecFile = NonNullable<TemplateSpec['files']>[number];

/** One problem in a spec: the field (`files[2].mode`), what is wrong, and its own code if not `VALIDATION_FAILED`. */
interface SpecIssue {
  field: string;
  message: string;
  code?: ErrorCode;
}

/**
 * Validate a parsed spec. `origin` names where it came from (a file path, `request body`) and starts
 * every error message. Beyond the schema: each file has exactly one of `content`/`source`, `encoding`
 * only with `content`, `mode` within 0..0o7777, a normalized absolute `path`, no path twice, `from`
 * not the template itself. These run even when the schema fails, so one error lists every problem.
 * Rejects `VALIDATION_FAILED` (`details.issues`: `{ field, message }[]`, in spec order).
 */
export function validateTemplateSpec(value: unknown, origin: string, options: { requireInline?: boolean } = {}): TemplateSpec {
  const { spec, issues } = inspectSpec(value);
  const all = options.requireInline ? sortIssues([...issues, ...sourceIssues(value)]) : issues;
  if (!spec || all.length > 0) throw specError(origin, all);
  return spec;
}

/**
 * Reject a spec that still has a `files[].source` (a spec that came over the API must carry its
 * files inline: the daemon cannot read the client's disk). Rejects `VALIDATION_FAILED`.
 * `validateTemplateSpec(value, origin, { requireInline: true })` reports these with every other problem.
 */
export function assertSpecInlined(spec: TemplateSpec, origin: string): void {
  const issues = sourceIssues(spec);
  if (issues.length > 0) throw specError(origin, issues);
}

/** One issue per `files[].source` still in `value` (a parsed spec, valid or not). */
function sourceIssues(value: unknown): SpecIssue[] {
  const files = typeof value === 'object' && value !== null ? (value as { files?: unknown }).files : undefined;
  if (!Array.isArray(files)) return [];
  return files.flatMap((file: unknown, index) =>
    typeof file === 'object' && file !== null && (file as { source?: unknown }).source !== undefined
      ? [{ field: `files[${index}].source`, message: 'must be inlined as "content" before the build (the spec loader does this)' }]
      : [],
  );
}

/**
 * Read a spec file (YAML or JSON), validate it, and inline every `files[].source` (resolved relative
 * to the spec file's directory) as `content`: UTF-8 text as is, anything else base64 with
 * `encoding: 'base64'`. A file without `mode` takes the source's permission bits.
 * The schema, the extra checks and every source file are checked before anything is thrown, and one
 * error lists all problems. Rejects `FILE_NOT_FOUND` / `IS_A_DIRECTORY` for the spec file itself; for
 * the spec's contents `VALIDATION_FAILED`, except that when every problem is a missing source file the
 * code is `FILE_NOT_FOUND` (`files[3].source: missing.sh does not exist (/abs/missing.sh)`).
 */
export async function loadTemplateSpecFile(path: string): Promise<TemplateSpec> {
  const text = await readSpecText(path);
  const value = parseSpecText(text, path);
  const baseDir = dirname(resolve(path));
  const { spec, issues } = inspectSpec(value);
  const sourceIssues = await Promise.all(rawFiles(value).map((file, index) => checkSource(file, index, baseDir)));
  const all = sortIssues([...issues, ...sourceIssues.flat()]);
  if (!spec || all.length > 0) throw specError(path, all);
  if (!spec.files) return spec;
  const files = await Promise.all(spec.files.map((file, index) => inlineSource(file, index, baseDir, path)));
  return { ...spec, files };
}

/**
 * Parse spec text as JSON (for `.json` paths) or YAML; rejects `VALIDATION_FAILED` with the position.
 * In YAML, a `files[].mode` written with a leading zero is read as octal; one whose digits are not all
 * octal stays the string it was written as, which validation refuses (`0999 is not an octal mode`).
 */
export function parseSpecText(text: string, origin: string): unknown {
  if (origin.endsWith('.json')) {
    try {
      return JSON.parse(text);
    } catch (error) {
      throw specError(origin, [{ field: '(syntax)', message: (error as Error).message }]);
    }
  }
  const document = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0) {
    throw specError(origin, document.errors.map((error) => ({ field: '(syntax)', message: error.message.split('\n')[0] })));
  }
  const files = isMap(document.contents) ? document.contents.get('files', true) : undefined;
  for (const item of isSeq(files) ? files.items : []) {
    const mode = isMap(item) ? item.get('mode', true) : undefined;
    if (isScalar(mode) && typeof mode.source === 'string') {
      const octal = readLeadingZeroMode(mode.source);
      if (octal !== undefined) mode.value = octal;
    }
  }
  return document.toJS();
}

/** `0755` / `+0755` -> 0o755 (`-0755` -> -0o755, refused later as out of range); `0999` -> `'0999'`; else undefined (YAML's reading stands). */
function readLeadingZeroMode(source: string): number | string | undefined {
  const match = /^([-+]?)0([0-9]+)$/.exec(source);
  if (!match) return undefined;
  const digits = match[2]!;
  if (!/^[0-7]+$/.test(digits)) return source;
  return (match[1] === '-' ? -1 : 1) * Number.parseInt(digits, 8);
}

/**
 * Schema issues and the extra checks' issues, in spec order. For a `path` or `mode` the extra check's
 * message is the more precise one (`0999 is not an octal mode`, not `expected number`): it replaces
 * the schema's for that field.
 */
function inspectSpec(value: unknown): { spec: TemplateSpec | undefined; issues: SpecIssue[] } {
  // The API's plain words (contracts/src/issue-messages.ts): what is allowed and what was received.
  const parsed = TemplateSpec.safeParse(value, { error: plainErrorMap(value, TemplateSpec) });
  const extra = extraIssues(value);
  const ownFields = new Set(extra.map((issue) => issue.field).filter((field) => /\.(path|mode)$/.test(field)));
  // One message per field, as the API gives (2^53 for an .int().max(n) is two zod issues in the same words).
  const schema = parsed.success ? [] : parsed.error.issues.map((issue) => zodIssue(issue)).filter((issue) => !ownFields.has(issue.field) && ownFields.add(issue.field));
  return { spec: parsed.success ? parsed.data : undefined, issues: sortIssues([...schema, ...extra]) };
}

/** The checks the schema cannot make, run on the raw value (whatever its shape) so they add to the schema's. */
function extraIssues(value: unknown): SpecIssue[] {
  if (!isRecord(value)) return [];
  const issues: SpecIssue[] = [];
  const seen = new Map<string, number>();
  rawFiles(value).forEach((file, index) => {
    const at = `files[${index}]`;
    if (!isRecord(file)) return;
    if ((file.content === undefined) === (file.source === undefined)) issues.push({ field: at, message: 'give exactly one of "content" or "source"' });
    if (file.encoding !== undefined && file.content === undefined) issues.push({ field: `${at}.encoding`, message: 'only allowed with "content"' });
    const mode = modeProblem(file.mode);
    if (mode) issues.push({ field: `${at}.mode`, message: mode });
    if (typeof file.path !== 'string') return;
    const path = pathProblem(file.path);
    if (path) issues.push({ field: `${at}.path`, message: path });
    const previous = seen.get(file.path);
    if (!path && previous !== undefined) issues.push({ field: `${at}.path`, message: `${file.path} is already placed by files[${previous}]` });
    if (!path) seen.set(file.path, index);
  });
  if (typeof value.from === 'string' && value.from === value.name) issues.push({ field: 'from', message: 'a template cannot be built from itself' });
  return issues;
}

function modeProblem(mode: unknown): string | undefined {
  if (typeof mode === 'string' && /^[-+]?0[0-9]*[89][0-9]*$/.test(mode)) {
    return `${mode} is not an octal mode (a leading 0 means octal: digits 0-7 only)`;
  }
  if (typeof mode !== 'number' || !Number.isInteger(mode) || (mode >= 0 && mode <= 0o7777)) return undefined;
  return `must be a permission mode between 0 and 0o7777, not ${mode}${mode > 0 ? ` (0o${mode.toString(8)})` : ''}`;
}

function pathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return `must be an absolute path (starting with "/"): ${path}`;
  if (/(^|\/)\.\.?(\/|$)/.test(path) || path.endsWith('/') || path.includes('//')) {
    return `must be a normalized absolute file path without "." or ".." parts: ${path}`;
  }
  return undefined;
}

/** Whether `files[index].source` (if it is a string) names a readable regular host file of at most MAX_SOURCE_FILE_BYTES. */
async function checkSource(file: unknown, index: number, baseDir: string): Promise<SpecIssue[]> {
  if (!isRecord(file) || typeof file.source !== 'string') return [];
  const field = `files[${index}].source`;
  const hostPath = resolve(baseDir, file.source);
  const shown = isAbsolute(file.source) ? file.source : `${file.source} (${hostPath})`;
  try {
    const info = await stat(hostPath);
    if (info.isDirectory()) return [{ field, message: `${shown} is a directory`, code: 'IS_A_DIRECTORY' }];
    if (!info.isFile()) return [{ field, message: `${shown} is not a regular file` }];
    if (info.size > MAX_SOURCE_FILE_BYTES) return [{ field, message: `${shown} is ${info.size} bytes, more than the ${MAX_SOURCE_FILE_BYTES} allowed` }];
    return [];
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [{ field, message: `${shown} does not exist`, code: 'FILE_NOT_FOUND' }];
    return [{ field, message: `cannot use ${shown}: ${(error as Error).message}` }];
  }
}

async function inlineSource(file: SpecFile, index: number, baseDir: string, origin: string): Promise<SpecFile> {
  if (file.source === undefined) return file;
  const hostPath = resolve(baseDir, file.source);
  let data: Buffer;
  let hostMode: number;
  try {
    hostMode = (await stat(hostPath)).mode & 0o7777;
    data = await readFile(hostPath);
  } catch (error) {
    throw specError(origin, [{ field: `files[${index}].source`, message: `cannot use ${hostPath}: ${(error as Error).message}` }]);
  }
  const { source: _source, ...rest } = file;
  const text = decodeUtf8(data);
  return {
    ...rest,
    mode: file.mode ?? hostMode,
    ...(text === null ? { content: data.toString('base64'), encoding: 'base64' as const } : { content: text }),
  };
}

/** The spec file's text; `FILE_NOT_FOUND` / `IS_A_DIRECTORY` / `VALIDATION_FAILED` (unreadable) naming it. */
async function readSpecText(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new RamifyError('FILE_NOT_FOUND', `template spec ${path} does not exist`, { file: path });
    if (code === 'EISDIR') throw new RamifyError('IS_A_DIRECTORY', `template spec ${path} is a directory`, { file: path });
    throw new RamifyError('VALIDATION_FAILED', `${path}: cannot read the template spec (${(error as Error).message})`, { file: path });
  }
}

function decodeUtf8(data: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(data);
  } catch {
    return null;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function rawFiles(value: unknown): unknown[] {
  return isRecord(value) && Array.isArray(value.files) ? value.files : [];
}

const FIELD_ORDER = ['(syntax)', '(top level)', 'name', 'from', 'packages', 'files', 'run', 'envs'];

/** Spec order: top-level fields as the reference lists them, then by list index; stable otherwise. */
function sortIssues(issues: SpecIssue[]): SpecIssue[] {
  const key = (field: string): [number, number] => {
    const match = /^([^.[]+)(?:\[(\d+)\])?/.exec(field);
    const rank = FIELD_ORDER.indexOf(match?.[1] ?? '');
    return [rank === -1 ? FIELD_ORDER.length : rank, match?.[2] === undefined ? -1 : Number(match[2])];
  };
  return [...issues].sort((a, b) => {
    const [ra, ia] = key(a.field);
    const [rb, ib] = key(b.field);
    return ra - rb || ia - ib;
  });
}

/**
 * A schema issue as a spec problem: its message is the plain map's (`must be ..., got '...'`), the field
 * written as the spec reference writes it (`files[0].mode`).
 */
function zodIssue(issue: z.core.$ZodIssue): SpecIssue {
  const field = issue.path.reduce<string>((out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part)), '');
  return { field: field || '(top level)', message: issue.message };
}

/** One error for all issues: their common code when they share one that is not VALIDATION_FAILED, else VALIDATION_FAILED. */
function specError(origin: string, issues: SpecIssue[]): RamifyError {
  const text = issues.map((issue) => `${issue.field}: ${issue.message}`).join('; ');
  const codes = new Set(issues.map((issue) => issue.code ?? 'VALIDATION_FAILED'));
  const code = codes.size === 1 ? [...codes][0]! : 'VALIDATION_FAILED';
  return new RamifyError(code, `${origin}: ${text}`, { file: origin, issues: issues.map(({ field, message }) => ({ field, message })) });
}
