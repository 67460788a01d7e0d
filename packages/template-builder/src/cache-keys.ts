/**
 * Content-addressed keys of the three template layers. Each key hashes exactly the inputs of its
 * layer plus the key of the layer below, so changing an input rebuilds that layer and everything
 * above it, and nothing below:
 * - `rootfs` (layer A): Debian suite, architecture, apt sources, sorted package set;
 * - `files` (layer B): A's key, placed files (path, mode, content hash), the agent bundle;
 * - `image` (layer C): B's key, template name, runtime, setup commands, envs.
 * The image key is the template's `specHash`.
 */
import type { RuntimeName } from '@ramify/contracts';
import { createHash } from 'node:crypto';
import { DEBIAN_SUITE } from './base-spec.js';
import type { ResolvedTemplate } from './resolve.js';

/**
 * Version of each layer's recipe. Bump one when the way that layer is made changes (for example what
 * `files` writes into /etc), so existing caches are not reused for the new recipe.
 */
export const LAYER_RECIPE_VERSIONS = { rootfs: 1, files: 2, image: 1 } as const;

/** Inputs of a build that are not part of the spec. */
export interface LayerKeyInputs {
  /** Debian architecture, e.g. `amd64`. */
  arch: string;
  /** apt source lines given to mmdebstrap. */
  mirrors: readonly string[];
  /** sha256 (hex) of the agent bundle placed at /opt/ramify/agent.mjs. */
  agentBundleSha256: string;
  runtime: RuntimeName;
  /** The runtime's image format (`Runtime.imageFormat`): a new format invalidates cached images. */
  imageFormat?: string;
}

/** sha256 hex keys of the three layers. */
export interface LayerKeys {
  rootfs: string;
  files: string;
  image: string;
}

/** Compute the three layer keys of a resolved template. Pure and deterministic. */
export function computeLayerKeys(template: ResolvedTemplate, inputs: LayerKeyInputs): LayerKeys {
  const rootfs = hashJson({
    layer: 'rootfs',
    recipe: LAYER_RECIPE_VERSIONS.rootfs,
    suite: DEBIAN_SUITE,
    variant: 'minbase',
    arch: inputs.arch,
    mirrors: inputs.mirrors,
    packages: [...new Set(template.packages)].sort(),
  });
  const files = hashJson({
    layer: 'files',
    recipe: LAYER_RECIPE_VERSIONS.files,
    rootfs,
    files: [...template.files].sort((a, b) => (a.path < b.path ? -1 : 1)).map((file) => [file.path, file.mode, file.sha256]),
    agent: inputs.agentBundleSha256,
  });
  const image = hashJson({
    layer: 'image',
    recipe: LAYER_RECIPE_VERSIONS.image,
    files,
    name: template.name,
    runtime: inputs.runtime,
    ...(inputs.imageFormat ? { imageFormat: inputs.imageFormat } : {}),
    run: template.run,
    envs: Object.entries(template.envs).sort(([a], [b]) => (a < b ? -1 : 1)),
  });
  return { rootfs, files, image };
}

function hashJson(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}
