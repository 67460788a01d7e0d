/**
 * What the in-sandbox agent bundle takes from contracts (its esbuild alias for `@ramify/contracts`):
 * the typed errors and the terminal-size rules, without the zod schemas of the API.
 */
export * from './errors.js';
export * from './pty.js';
export * from './watch.js';
export * from './agent-port.js';
