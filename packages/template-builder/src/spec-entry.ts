/**
 * `@ramify/template-builder/spec`: the template-spec loader and the base spec alone, without the
 * builder (runtimes, layer cache, debootstrap). The CLI imports this entry so that every `ramify`
 * call does not load the whole builder (about 0.2 s of start-up on this machine, measured with a
 * timed `import()` of each entry).
 */
export { loadTemplateSpecFile, validateTemplateSpec, assertSpecInlined, parseSpecText, MAX_SOURCE_FILE_BYTES } from './spec.js';
export { BASE_TEMPLATE_SPEC, REQUIRED_PACKAGES, DEBIAN_SUITE, DEFAULT_DEBIAN_MIRRORS } from './base-spec.js';
