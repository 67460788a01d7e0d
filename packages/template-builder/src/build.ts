/**
 * `buildTemplate`: spec → (rootfs layer, files layer, image), reusing every layer whose key is
 * unchanged. Progress is reported as `TemplateBuildEvent`s of type `step` and `log`; the outcome is
 * the return value (or the rejection), from which the caller emits `done`/`error`.
 *
 * Steps (numbered from 1, `total` = 4 + number of setup commands): `rootfs`, `files`, `boot`, one
 * `run: <cmd>` per setup command, `checkpoint`. A reused layer's steps come with `cached: true`.
 */
import { RamifyError, isRamifyError, type TemplateBuildEvent, type TemplateSpec } from '@ramify/contracts';
import { newTemplateId, type SnapshotManifest } from '@ramify/core';
import { join } from 'node:path';
import { DEFAULT_DEBIAN_MIRRORS } from './base-spec.js';
import { computeLayerKeys, type LayerKeys } from './cache-keys.js';
import { buildFilesLayer } from './files-layer.js';
import { agentFilesSha256 } from './agent-files.js';
import { buildImage, type ImageBuildDeps } from './image-layer.js';
import { LayerCache, type Layer } from './layer-cache.js';
import { resolveTemplate, type ResolvedTemplate } from './resolve.js';
import { debootstrap, hostDebianArch } from './rootfs-layer.js';
import { validateTemplateSpec } from './spec.js';

/**
 * Where the builder finds built templates by name, as the team it builds for sees them (to keep a rebuilt
 * template's id, and to resolve `from`). `LocalTemplateBuilder` answers it from the Store.
 */
export interface TemplateRegistry {
  /** The team's own current template called `name`, or null (a rebuild keeps its id). */
  findTemplateByName(name: string): Promise<{ id: string; specHash: string } | null>;
  /** The template `from: name` means: the team's own, else a shared one; null when neither exists. Default {@link findTemplateByName}. */
  findParentTemplate?(name: string): Promise<{ id: string; specHash: string } | null>;
}

export interface TemplateBuildDeps extends ImageBuildDeps {
  /** Ramify's data directory; the cache lives in `<dataDir>/templates/`. */
  dataDir: string;
  /** Host path of the agent bundle (`AGENT_BUNDLE_PATH` of `@ramify/agent`). */
  agentBundlePath: string;
  registry: TemplateRegistry;
  /**
   * The id the template is built under; default the team's current template's of the name (a rebuild
   * keeps its id), else a new `tpl_` id. A build of several runtimes passes its first runtime's, so that
   * every runtime's image names the one template (before, a new template's second image named an id no
   * template had, listed as `(deleted)`).
   */
  templateId?: string;
  /** apt source lines for mmdebstrap; default {@link DEFAULT_DEBIAN_MIRRORS}. */
  mirrors?: readonly string[];
  /** Paths of host tools; default found on PATH. */
  tools?: { mmdebstrap?: string; cp?: string };
  /** Cancels the build (mmdebstrap is stopped, the build sandbox killed). */
  signal?: AbortSignal;
}

/** What a build produced: everything the caller needs to register the template. */
export interface BuiltTemplate {
  /** Existing id of the template with this name, or a new `tpl_` id. */
  templateId: string;
  name: string;
  parent: string | null;
  /** Key of the image layer: equal spec chain, files, agent and recipe give an equal hash. */
  specHash: string;
  snapshotId: string;
  snapshot: SnapshotManifest;
  /** The template's root filesystem (the `files` layer), never modified once built. */
  rootfsDir: string;
  /** Root filesystem bytes + image bytes. */
  sizeBytes: number;
  /** Default environment of the template's sandboxes (flattened over the parent's). */
  envs: Record<string, string>;
  /** The spec with its parent folded in (stored for children; no `from`). */
  flattenedSpec: TemplateSpec;
  keys: LayerKeys;
  /** Which layers were reused. */
  cached: { rootfs: boolean; files: boolean; image: boolean };
  elapsedMs: number;
}

/** Image builds running in this process, by image key: an identical concurrent build waits for the first. */
const imageBuilds = new Map<string, Promise<SnapshotManifest>>();

/**
 * Build (or reuse) the template described by `spec` (validated here again, files inlined).
 * Rejects `VALIDATION_FAILED` (spec), `TEMPLATE_NOT_FOUND` (unknown `from`), `TEMPLATE_BUILD_FAILED`
 * (mmdebstrap, the files copy, a setup command), `CHECKPOINT_BLOCKED`, `AGENT_UNREACHABLE`, runtime errors.
 */
export async function buildTemplate(spec: TemplateSpec, deps: TemplateBuildDeps, onEvent: (event: TemplateBuildEvent) => void): Promise<BuiltTemplate> {
  try {
    return await build(spec, deps, onEvent);
  } catch (error) {
    if (deps.signal?.aborted && !isRamifyError(error)) throw new RamifyError('TEMPLATE_BUILD_FAILED', 'the template build was cancelled', { step: 'cancelled' });
    throw error;
  }
}

async function build(spec: TemplateSpec, deps: TemplateBuildDeps, onEvent: (event: TemplateBuildEvent) => void): Promise<BuiltTemplate> {
  const startedAt = Date.now();
  // Over the API the daemon cannot read the client's disk: a `source` left in is reported with every other problem.
  const valid = validateTemplateSpec(spec, `template '${String(spec.name)}'`, { requireInline: true });
  const cache = new LayerCache(join(deps.dataDir, 'templates'));
  const existing = await deps.registry.findTemplateByName(valid.name);
  const resolved = await resolveTemplate(valid, async (name) => {
    const parent = deps.registry.findParentTemplate ? await deps.registry.findParentTemplate(name) : await deps.registry.findTemplateByName(name);
    return parent ? cache.loadSpec(parent.specHash) : null;
  });
  const mirrors = deps.mirrors ?? DEFAULT_DEBIAN_MIRRORS;
  const keys = computeLayerKeys(resolved, {
    arch: await hostDebianArch(),
    mirrors,
    agentBundleSha256: await agentFilesSha256(deps.agentBundlePath),
    runtime: deps.runtime.name,
    ...(deps.runtime.imageFormat ? { imageFormat: deps.runtime.imageFormat } : {}),
  });
  const templateId = deps.templateId ?? existing?.id ?? newTemplateId();
  const snapshotId = `snap_tpl_${keys.image.slice(0, 26)}`;

  const total = 4 + resolved.run.length;
  let index = 0;
  const step = (name: string, cached: boolean): void => onEvent({ type: 'step', step: name, index: ++index, total, cached });
  const log = (line: string): void => onEvent({ type: 'log', line });
  const rootfsStep = `rootfs: debian bookworm minbase + ${resolved.packages.length} packages`;
  const filesStep = `files: ${resolved.files.length} file(s), agent`;
  const runSteps = resolved.run.map((cmd) => `run: ${cmd.length > 80 ? `${cmd.slice(0, 77)}...` : cmd}`);

  let filesLayer = await cache.get('files', keys.files);
  const cached = { rootfs: true, files: filesLayer !== null, image: filesLayer !== null && (await hasSnapshot(deps, snapshotId)) };
  let snapshot: SnapshotManifest;
  if (filesLayer && cached.image) {
    for (const name of [rootfsStep, filesStep, 'boot', ...runSteps, 'checkpoint']) step(name, true);
    snapshot = (await deps.storage.open(snapshotId)).manifest;
  } else {
    if (!filesLayer) {
      const built = await buildLowerLayers(resolved, keys, { cache, deps, mirrors, step: { rootfs: rootfsStep, files: filesStep }, onStep: step, log });
      filesLayer = built.files;
      cached.rootfs = built.rootfsCached;
    } else {
      step(rootfsStep, true);
      step(filesStep, true);
    }
    const rootfsDir = filesLayer.rootfsDir;
    let pending = imageBuilds.get(keys.image);
    if (pending) log('an identical build is in progress; waiting for it');
    else {
      pending = (async () => {
        // An image without its files layer is stale (the rootfs it was made on is gone): rebuild it.
        await deps.storage.remove(snapshotId);
        return buildImage(
          {
            rootfsDir,
            snapshotId,
            templateId,
            run: resolved.run,
            envs: resolved.envs,
            onPhase: (phase) => step(phase.kind === 'run' ? runSteps[phase.index] : phase.kind, false),
            onLine: log,
            signal: deps.signal,
          },
          deps,
        );
      })().finally(() => imageBuilds.delete(keys.image));
      imageBuilds.set(keys.image, pending);
    }
    snapshot = await pending;
  }
  await cache.saveSpec(keys.image, resolved.spec);
  return {
    templateId,
    name: resolved.name,
    parent: resolved.parent,
    specHash: keys.image,
    snapshotId,
    snapshot,
    rootfsDir: filesLayer.rootfsDir,
    sizeBytes: filesLayer.sizeBytes + snapshot.sizeBytes,
    envs: resolved.envs,
    flattenedSpec: resolved.spec,
    keys,
    cached,
    elapsedMs: Date.now() - startedAt,
  };
}

/** Ensure layers A and B (B is missing); emits their two steps. */
async function buildLowerLayers(
  resolved: ResolvedTemplate,
  keys: LayerKeys,
  context: {
    cache: LayerCache;
    deps: TemplateBuildDeps;
    mirrors: readonly string[];
    step: { rootfs: string; files: string };
    onStep: (name: string, cached: boolean) => void;
    log: (line: string) => void;
  },
): Promise<{ files: Layer; rootfsCached: boolean }> {
  const { cache, deps, log } = context;
  const cachedRootfs = await cache.get('rootfs', keys.rootfs);
  context.onStep(context.step.rootfs, cachedRootfs !== null);
  const rootfs =
    cachedRootfs ??
    (
      await cache.ensure('rootfs', keys.rootfs, { packages: resolved.packages, mirrors: context.mirrors }, (dir) =>
        debootstrap(dir, { packages: resolved.packages, mirrors: context.mirrors, mmdebstrap: deps.tools?.mmdebstrap, onLine: log, signal: deps.signal }),
      )
    ).layer;
  deps.signal?.throwIfAborted();
  context.onStep(context.step.files, false);
  const { layer } = await cache.ensure('files', keys.files, { rootfs: keys.rootfs, files: resolved.files.map((file) => file.path) }, (dir) =>
    buildFilesLayer(dir, { baseRootfsDir: rootfs.rootfsDir, files: resolved.files, agentBundlePath: deps.agentBundlePath, tools: deps.tools, onLine: log }),
  );
  return { files: layer, rootfsCached: cachedRootfs !== null };
}

async function hasSnapshot(deps: TemplateBuildDeps, snapshotId: string): Promise<boolean> {
  try {
    await deps.storage.open(snapshotId);
    return true;
  } catch (error) {
    const code = (error as { code?: string }).code;
    // Missing, or unreadable/corrupt (RUNTIME_ERROR): either way it is rebuilt.
    if (code === 'SNAPSHOT_NOT_FOUND' || code === 'RUNTIME_ERROR') return false;
    throw error;
  }
}

