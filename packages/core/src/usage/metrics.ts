/**
 * Use-case: a sandbox's live metrics (`GET /v1/sandboxes/{id}/metrics`): the samples the usage sampler took
 * while it ran (every `usageSampleMs`, kept in memory for `metricsWindowMs`), with E2B's field names.
 */
import type { MetricsQuery, SandboxMetric } from '@ramify/contracts';
import type { Core } from '../context.js';
import { loadSandbox } from '../lifecycle/records.js';
import { assertNotKilled } from '../lifecycle/state-machine.js';
import { parseQueryTime } from './report.js';

/**
 * The sandbox's samples from `start` to `end` (default: all kept), oldest first. Empty before its first
 * sample, while paused (no new ones) and with metering off.
 * @throws RamifyError `SANDBOX_NOT_FOUND` (also killed), `VALIDATION_FAILED` (a malformed `start`/`end`).
 */
export async function getSandboxMetrics(core: Core, sandboxId: string, query: MetricsQuery): Promise<SandboxMetric[]> {
  const start = query.start === undefined ? 0 : parseQueryTime(query.start, 'start');
  const end = query.end === undefined ? Number.MAX_SAFE_INTEGER : parseQueryTime(query.end, 'end');
  assertNotKilled(sandboxId, (await loadSandbox(core, sandboxId)).state);
  return core.meter.metrics.list(sandboxId, start, end).map(({ at, ...rest }) => ({ timestamp: new Date(at).toISOString(), ...rest }));
}
