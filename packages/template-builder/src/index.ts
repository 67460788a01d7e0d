/**
 * `@ramify/template-builder`: turns a template spec into a root filesystem plus a booted-and-idle
 * image, with a content-addressed layer cache under `<dataDir>/templates/`.
 */
export { LocalTemplateBuilder, type LocalTemplateBuilderOptions, type TemplateStore } from './local-template-builder.js';
export { buildTemplate, type BuiltTemplate, type TemplateBuildDeps, type TemplateRegistry } from './build.js';
export { buildImage, TEMPLATE_INIT_ARGV, templateInitArgv, type ImageBuildDeps, type ImageBuildRequest, type SlotAllocator } from './image-layer.js';
export { loadTemplateSpecFile, validateTemplateSpec, assertSpecInlined, parseSpecText, MAX_SOURCE_FILE_BYTES } from './spec.js';
export { BASE_TEMPLATE_SPEC, REQUIRED_PACKAGES, DEBIAN_SUITE, DEFAULT_DEBIAN_MIRRORS } from './base-spec.js';
export { resolveTemplate, flattenSpecs, DEFAULT_FILE_MODE, type ResolvedTemplate, type ResolvedFile, type ParentLookup } from './resolve.js';
export { computeLayerKeys, LAYER_RECIPE_VERSIONS, type LayerKeys, type LayerKeyInputs } from './cache-keys.js';
export { LayerCache, type Layer, type LayerKind } from './layer-cache.js';
export { debootstrap, mmdebstrapArgv, hostDebianArch, type DebootstrapOptions } from './rootfs-layer.js';
export { buildFilesLayer, AGENT_GUEST_PATH, AGENT_RUN_DIR, type FilesLayerOptions } from './files-layer.js';
export { agentFiles, agentFilesSha256, type AgentFile } from './agent-files.js';
