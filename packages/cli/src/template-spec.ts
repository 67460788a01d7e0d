/**
 * Read a template spec file (YAML or JSON) and make it sendable. Parsing and validation are the
 * template builder's own (`parseSpecText`, `validateTemplateSpec`), so the CLI reads a spec exactly as
 * the daemon checks it: `mode: 0755` is octal, every problem names the file and the field. Then every
 * `files[].source` (a host path relative to the spec file) is read and inlined as `content`: UTF-8 text
 * as is, anything else base64 with `encoding: base64`; a file without `mode` takes the source's
 * permission bits. The reference of the format is docs/template-spec.md.
 */
import { readFile, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { MAX_JSON_BODY_BYTES, RamifyError, type TemplateSpec } from '@ramify/contracts';
import { parseSpecText, validateTemplateSpec } from '@ramify/template-builder';

type SpecFile = NonNullable<TemplateSpec['files']>[number];

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

function decodeUtf8(bytes: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

async function inlineSource(file: SpecFile, baseDir: string, specPath: string): Promise<SpecFile> {
  if (file.source === undefined) return file;
  const hostPath = resolve(baseDir, file.source);
  const bytes = await readHostFile(hostPath, `source file ${file.source} (files[] of ${specPath})`);
  const { source: _source, ...rest } = file;
  const mode = file.mode ?? ((await stat(hostPath)).mode & 0o7777);
  const text = decodeUtf8(bytes);
  return { ...rest, mode, ...(text === null ? { content: bytes.toString('base64'), encoding: 'base64' as const } : { content: text }) };
}

/**
 * Load `path` and inline its `source` files. Throws `VALIDATION_FAILED` (syntax or schema, every
 * problem listed), `FILE_NOT_FOUND` / `IS_A_DIRECTORY` (the spec or a source file),
 * `PAYLOAD_TOO_LARGE` (the spec with its files inlined is over the API's request limit), or another
 * file error.
 */
export async function loadTemplateSpec(path: string): Promise<TemplateSpec> {
  const text = (await readHostFile(path, `template spec ${path}`)).toString('utf8');
  const spec = validateTemplateSpec(parseSpecText(text, path), path);
  if (!spec.files) return spec;
  const baseDir = dirname(resolve(path));
  const inlined: TemplateSpec = { ...spec, files: await Promise.all(spec.files.map((f) => inlineSource(f, baseDir, path))) };
  const size = Buffer.byteLength(JSON.stringify(inlined));
  if (size > MAX_JSON_BODY_BYTES) {
    throw new RamifyError('PAYLOAD_TOO_LARGE', `template spec ${path} with its files inlined is ${size} bytes; the API takes at most ${MAX_JSON_BODY_BYTES} bytes per request (fetch large files in a run step instead)`);
  }
  return inlined;
}
