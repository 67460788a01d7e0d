/**
 * Read a template spec file (YAML or JSON) and make it sendable: every `files[].source` (a host path
 * relative to the spec file) is read and inlined as `content`, then the spec is validated against the
 * contract's schema so mistakes are reported before anything is uploaded.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { parse } from 'yaml';
import { RamifyError, TemplateSpec } from '@ramify/contracts';

/** Read a host file; a missing file or a directory becomes a `FILE_NOT_FOUND` / `IS_A_DIRECTORY` error about `subject`. */
async function readHostFile(path: string, subject: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new RamifyError('FILE_NOT_FOUND', `${subject} does not exist`);
    if (code === 'EISDIR') throw new RamifyError('IS_A_DIRECTORY', `${subject} is a directory`);
    throw err;
  }
}

/**
 * Load `path` and inline its `source` files. Throws `VALIDATION_FAILED` (with every problem listed),
 * `FILE_NOT_FOUND` / `IS_A_DIRECTORY` (the spec or a source file), or another file error.
 */
export async function loadTemplateSpec(path: string): Promise<TemplateSpec> {
  const text = (await readHostFile(path, `template spec ${path}`)).toString('utf8');
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (err) {
    throw new RamifyError('VALIDATION_FAILED', `${path}: not valid YAML/JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  const base = dirname(resolve(path));
  const spec = (typeof raw === 'object' && raw !== null ? raw : {}) as { files?: unknown };
  if (Array.isArray(spec.files)) {
    spec.files = await Promise.all(spec.files.map(async (f: unknown) => {
      if (typeof f !== 'object' || f === null || typeof (f as { source?: unknown }).source !== 'string') return f;
      const { source, ...rest } = f as { source: string };
      const bytes = await readHostFile(resolve(base, source), `source file ${source} (files[] of ${path})`);
      let content: string;
      try {
        content = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
      } catch {
        throw new RamifyError('VALIDATION_FAILED', `${source}: only UTF-8 text files can be inlined into a template spec`);
      }
      return { ...rest, content };
    }));
  }
  const parsed = TemplateSpec.safeParse(spec);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || '(spec)'}: ${i.message}`).join('; ');
    throw new RamifyError('VALIDATION_FAILED', `${path}: ${problems}`);
  }
  return parsed.data;
}
