/**
 * Template spec loading and validation. A spec file is YAML (`.yaml`/`.yml`, or anything not `.json`)
 * or JSON; it is validated strictly against `TemplateSpec` from `@ramify/contracts`, and every error
 * names the file and the field (`./t.yaml: files[0].path: ...`).
 *
 * YAML note: YAML 1.2 reads `0755` as the decimal 755. Because that is never what a file mode means,
 * a `mode:` written with a leading zero and only octal digits is read as octal (`0755` = 0o755).
 */
import { RamifyError, TemplateSpec } from '@ramify/contracts';
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { isPair, isScalar, parseDocument, visit } from 'yaml';
import type { z } from 'zod';

/** Largest host file `files[].source` may inline. */
export const MAX_SOURCE_FILE_BYTES = 64 * 1024 * 1024;

type SpecFile = NonNullable<TemplateSpec['files']>[number];

/**
 * Validate a parsed spec. `origin` names where it came from (a file path, `request body`) and starts
 * every error message. Beyond the schema: each file has exactly one of `content`/`source`, `encoding`
 * only with `content`, `mode` within 0..0o7777, no path twice, `from` not the template itself.
 * Rejects `VALIDATION_FAILED` listing every problem (`details.issues`: `{ field, message }[]`).
 */
export function validateTemplateSpec(value: unknown, origin: string): TemplateSpec {
  const parsed = TemplateSpec.safeParse(value);
  if (!parsed.success) throw specError(origin, parsed.error.issues.map(zodIssue));
  const spec = parsed.data;
  const issues: SpecIssue[] = [];
  const seen = new Map<string, number>();
  (spec.files ?? []).forEach((file, index) => {
    const at = `files[${index}]`;
    if ((file.content === undefined) === (file.source === undefined)) {
      issues.push({ field: at, message: 'give exactly one of "content" or "source"' });
    }
    if (file.encoding !== undefined && file.content === undefined) issues.push({ field: `${at}.encoding`, message: 'only allowed with "content"' });
    if (file.mode !== undefined && (file.mode < 0 || file.mode > 0o7777)) issues.push({ field: `${at}.mode`, message: 'must be a permission mode between 0 and 0o7777' });
    if (/(^|\/)\.\.?(\/|$)/.test(file.path) || file.path.endsWith('/') || file.path.includes('//')) {
      issues.push({ field: `${at}.path`, message: `must be a normalized absolute file path without "." or ".." parts: ${file.path}` });
    }
    const previous = seen.get(file.path);
    if (previous !== undefined) issues.push({ field: `${at}.path`, message: `${file.path} is already placed by files[${previous}]` });
    seen.set(file.path, index);
  });
  if (spec.from !== undefined && spec.from === spec.name) issues.push({ field: 'from', message: 'a template cannot be built from itself' });
  if (issues.length > 0) throw specError(origin, issues);
  return spec;
}

/**
 * Reject a spec that still has a `files[].source` (a spec that came over the API must carry its
 * files inline: the daemon cannot read the client's disk). Rejects `VALIDATION_FAILED`.
 */
export function assertSpecInlined(spec: TemplateSpec, origin: string): void {
  const issues = (spec.files ?? []).flatMap((file, index) =>
    file.source === undefined ? [] : [{ field: `files[${index}].source`, message: 'must be inlined as "content" before the build (the spec loader does this)' }],
  );
  if (issues.length > 0) throw specError(origin, issues);
}

/**
 * Read a spec file (YAML or JSON), validate it, and inline every `files[].source` (resolved relative
 * to the spec file's directory) as `content`: UTF-8 text as is, anything else base64 with
 * `encoding: 'base64'`. A file without `mode` takes the source's permission bits.
 * Rejects `VALIDATION_FAILED` (syntax, schema, unreadable or oversized source) naming file and field.
 */
export async function loadTemplateSpecFile(path: string): Promise<TemplateSpec> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new RamifyError('VALIDATION_FAILED', `${path}: cannot read the template spec (${(error as Error).message})`, { file: path });
  }
  const spec = validateTemplateSpec(parseSpecText(text, path), path);
  const baseDir = dirname(resolve(path));
  const files = await Promise.all((spec.files ?? []).map((file, index) => inlineSource(file, index, baseDir, path)));
  return spec.files ? { ...spec, files } : spec;
}

/** Parse spec text as JSON (for `.json` paths) or YAML; rejects `VALIDATION_FAILED` with the position. */
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
  visit(document, {
    Pair(_, pair) {
      if (isPair(pair) && isScalar(pair.key) && pair.key.value === 'mode' && isScalar(pair.value)) {
        const source = (pair.value as { source?: unknown }).source;
        if (typeof source === 'string' && /^0[0-7]+$/.test(source)) pair.value.value = Number.parseInt(source, 8);
      }
    },
  });
  return document.toJS();
}

async function inlineSource(file: SpecFile, index: number, baseDir: string, origin: string): Promise<SpecFile> {
  if (file.source === undefined) return file;
  const field = `files[${index}].source`;
  const hostPath = resolve(baseDir, file.source);
  let data: Buffer;
  let hostMode: number;
  try {
    const info = await stat(hostPath);
    if (!info.isFile()) throw new Error('not a regular file');
    if (info.size > MAX_SOURCE_FILE_BYTES) throw new Error(`${info.size} bytes is more than the ${MAX_SOURCE_FILE_BYTES} allowed`);
    hostMode = info.mode & 0o7777;
    data = await readFile(hostPath);
  } catch (error) {
    throw specError(origin, [{ field, message: `cannot use ${hostPath}: ${(error as Error).message}` }]);
  }
  const { source: _source, ...rest } = file;
  const text = decodeUtf8(data);
  return {
    ...rest,
    mode: file.mode ?? hostMode,
    ...(text === null ? { content: data.toString('base64'), encoding: 'base64' as const } : { content: text }),
  };
}

function decodeUtf8(data: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(data);
  } catch {
    return null;
  }
}

interface SpecIssue {
  field: string;
  message: string;
}

function zodIssue(issue: z.core.$ZodIssue): SpecIssue {
  const field = issue.path.reduce<string>((out, part) => (typeof part === 'number' ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part)), '');
  return { field: field || '(top level)', message: issue.message };
}

function specError(origin: string, issues: SpecIssue[]): RamifyError {
  const text = issues.map((issue) => `${issue.field}: ${issue.message}`).join('; ');
  return new RamifyError('VALIDATION_FAILED', `${origin}: ${text}`, { file: origin, issues });
}
