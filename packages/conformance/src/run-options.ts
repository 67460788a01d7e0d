/**
 * Harness options every conformance test file reads from the environment:
 * `RAMIFY_CONFORMANCE_LOG=/path` keeps the daemon's log (copied there on teardown), with
 * `RAMIFY_CONFORMANCE_LOG_LEVEL` (`warn` default, `info`, `debug`).
 */
import type { HarnessOptions } from './harness.js';

/** Log options of the harness from `RAMIFY_CONFORMANCE_LOG` / `RAMIFY_CONFORMANCE_LOG_LEVEL`. */
export function logOptionsFromEnv(): Pick<HarnessOptions, 'keepLogAt' | 'logLevel'> {
  const level = process.env.RAMIFY_CONFORMANCE_LOG_LEVEL;
  return {
    keepLogAt: process.env.RAMIFY_CONFORMANCE_LOG || undefined,
    logLevel: level === 'info' || level === 'debug' ? level : 'warn',
  };
}
