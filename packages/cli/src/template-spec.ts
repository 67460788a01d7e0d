/**
 * Read a template spec file (YAML or JSON) and make it sendable. Reading, validation and inlining are
 * the template builder's own (`loadTemplateSpecFile`), so the CLI reads a spec exactly as the daemon
 * checks it: `mode: 0755` is octal (`0999` is refused), and one error lists every problem, each naming
 * the file and the field. Every `files[].source` (a host path relative to the spec file) is inlined as
 * `content`: UTF-8 text as is, anything else base64 with `encoding: base64`; a file without `mode`
 * takes the source's permission bits. The reference of the format is docs/template-spec.md.
 */
import { MAX_JSON_BODY_BYTES, RamifyError } from '@ramify/contracts/client';
import type { TemplateSpec } from '@ramify/contracts';

/**
 * Load `path` and inline its `source` files. Throws `FILE_NOT_FOUND` / `IS_A_DIRECTORY` (the spec
 * file itself), `VALIDATION_FAILED` (syntax, schema or source files: every problem listed),
 * `FILE_NOT_FOUND` when the only problems are missing source files (each named by its index:
 * `files[3].source: missing.sh (/abs/missing.sh) does not exist`), or `PAYLOAD_TOO_LARGE` (the spec
 * with its files inlined is over the API's request limit).
 */
export async function loadTemplateSpec(path: string): Promise<TemplateSpec> {
  // Loaded on use: the YAML parser is not needed by the other commands (CLI start-up).
  const { loadTemplateSpecFile } = await import('@ramify/template-builder/spec');
  const inlined = await loadTemplateSpecFile(path);
  const size = Buffer.byteLength(JSON.stringify(inlined));
  if (size > MAX_JSON_BODY_BYTES) {
    throw new RamifyError('PAYLOAD_TOO_LARGE', `template spec ${path} with its files inlined is ${size} bytes; the API takes at most ${MAX_JSON_BODY_BYTES} bytes per request (fetch large files in a run step instead)`);
  }
  return inlined;
}
