/**
 * Flattening a spec with its parent into one self-contained recipe. A child template's packages are
 * its parent's ∪ its own, its files are the parent's with its own placed over them (same path: the
 * child's wins), its setup commands run after the parent's, its envs override the parent's.
 *
 * Parents are looked up already flattened (the builder stores each built template's flattened spec),
 * so one lookup resolves the whole chain and cycles cannot arise.
 */
import { RamifyError, quote, type TemplateSpec } from '@ramify/contracts';
import { createHash } from 'node:crypto';
import { BASE_TEMPLATE_SPEC, REQUIRED_PACKAGES } from './base-spec.js';

/** One file to place in the root filesystem, decoded. */
export interface ResolvedFile {
  /** Absolute path inside the sandbox. */
  path: string;
  /** Permission bits (default 0o644). */
  mode: number;
  data: Buffer;
  /** sha256 of `data`, hex. */
  sha256: string;
}

/** A template with its parent folded in: everything a build needs, nothing to look up. */
export interface ResolvedTemplate {
  name: string;
  /** Parent template name, or null for a root template. */
  parent: string | null;
  /** Debian packages, sorted, unique, always including {@link REQUIRED_PACKAGES}. */
  packages: string[];
  /** Sorted by path, unique paths. */
  files: ResolvedFile[];
  /** Setup commands in execution order (the parent's first). */
  run: string[];
  envs: Record<string, string>;
  /** The same as a spec without `from` (what {@link flattenSpecs} returns), stored for later children. */
  spec: TemplateSpec;
}

/**
 * The flattened spec of an already built template called `name`, or null when there is none.
 * The builder answers this from the flattened specs it stored for the registry's templates.
 */
export type ParentLookup = (name: string) => Promise<TemplateSpec | null>;

/** Default mode of placed files. */
export const DEFAULT_FILE_MODE = 0o644;

/**
 * Fold `spec` and its parent into a {@link ResolvedTemplate}. `from: base` falls back to the built-in
 * {@link BASE_TEMPLATE_SPEC} when no `base` was built. `spec` must be validated and inlined.
 * Rejects `TEMPLATE_NOT_FOUND` for an unknown parent.
 */
export async function resolveTemplate(spec: TemplateSpec, lookupParent: ParentLookup): Promise<ResolvedTemplate> {
  let parent: TemplateSpec | null = null;
  if (spec.from !== undefined) {
    parent = (await lookupParent(spec.from)) ?? (spec.from === BASE_TEMPLATE_SPEC.name ? BASE_TEMPLATE_SPEC : null);
    if (parent === null) {
      throw new RamifyError('TEMPLATE_NOT_FOUND', `template ${quote(spec.name)} is built from ${quote(spec.from)}, which has not been built`, { id: spec.from });
    }
    if (parent.from !== undefined) throw new RamifyError('INTERNAL', `the stored spec of template '${spec.from}' is not flattened`);
  }
  const flat = flattenSpecs(parent, spec);
  return {
    name: spec.name,
    parent: spec.from ?? null,
    packages: flat.packages ?? [],
    files: (flat.files ?? []).map(decodeFile),
    run: flat.run ?? [],
    envs: flat.envs ?? {},
    spec: flat,
  };
}

/**
 * The flattened spec of `spec` (no `from`, parent folded in, packages sorted with the required ones,
 * files sorted by path): what the builder stores so that children of this template resolve in one
 * lookup.
 */
export function flattenSpecs(parent: TemplateSpec | null, spec: TemplateSpec): TemplateSpec {
  const packages = [...new Set([...REQUIRED_PACKAGES, ...(parent?.packages ?? []), ...(spec.packages ?? [])])].sort();
  const files = new Map<string, NonNullable<TemplateSpec['files']>[number]>();
  for (const file of [...(parent?.files ?? []), ...(spec.files ?? [])]) {
    if (file.source !== undefined) throw new RamifyError('VALIDATION_FAILED', `template '${spec.name}': ${file.path} must be inlined before the build`);
    files.set(file.path, file);
  }
  return {
    name: spec.name,
    packages,
    files: [...files.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
    run: [...(parent?.run ?? []), ...(spec.run ?? [])],
    envs: { ...(parent?.envs ?? {}), ...(spec.envs ?? {}) },
  };
}

function decodeFile(file: NonNullable<TemplateSpec['files']>[number]): ResolvedFile {
  const data = Buffer.from(file.content ?? '', file.encoding === 'base64' ? 'base64' : 'utf8');
  return { path: file.path, mode: file.mode ?? DEFAULT_FILE_MODE, data, sha256: createHash('sha256').update(data).digest('hex') };
}
