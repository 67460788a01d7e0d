/**
 * `@ramify/contracts/client`: what a client of the API needs at run time, without the zod schemas that
 * `@ramify/contracts` builds when it is imported (about 200 modules and 100+ ms of a CLI start): the
 * route table and its paths, the errors, the wire constants and limits, and the output capture. The
 * SDK and the CLI import values from here; types still come from `@ramify/contracts` (erased at run time).
 * Every value here is the same binding that `@ramify/contracts` exports (same module), so
 * `instanceof RamifyError` holds across both entries.
 */
export * from './constants.js';
export * from './errors.js';
export * from './routes.js';
export * from './route-paths.js';
export * from './output-capture.js';
export * from './pty.js';
