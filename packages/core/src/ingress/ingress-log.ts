/**
 * The ingress log: one entry per request (or WebSocket) the ingress served or answered itself for a
 * sandbox's port, and a count of the wakes requests caused. The ingress records entries into
 * `core.ingressLog` (buffered, never blocking the request: {@link BufferedLog}); the store keeps each
 * sandbox's newest 1000, as it does the egress log. A read writes what is still buffered first.
 */
import type { IngressLogEntry, IngressLogResponse } from '@ramify/contracts';
import type { Core } from '../context.js';
import { loadSandbox } from '../lifecycle/records.js';
import { assertNotKilled } from '../lifecycle/state-machine.js';
import { BufferedLog, type BufferedLogOptions } from '../log/buffered-log.js';
import type { IngressLogRecord, Store } from '../ports/store.js';

/** Longest path kept in an entry, characters (longer ones are cut and end in `…`). */
export const INGRESS_LOG_MAX_PATH = 2048;
/** Default and largest page of {@link getIngressLog}. */
export const INGRESS_LOG_DEFAULT_LIMIT = 100;
export const INGRESS_LOG_MAX_LIMIT = 1000;

export interface BufferedIngressLogOptions extends Omit<BufferedLogOptions<IngressLogRecord>, 'write' | 'name'> {
  store: Pick<Store, 'appendIngressLog'>;
}

/** Core's ingress log sink: `record(entry)` never throws or waits; malformed entries are dropped. */
export class BufferedIngressLog extends BufferedLog<IngressLogRecord, IngressLogRecord> {
  constructor(options: BufferedIngressLogOptions) {
    const { store, ...tunables } = options;
    super({ ...tunables, name: 'ingress log', write: (batch) => store.appendIngressLog(batch) }, checkEntry);
  }
}

function checkEntry(e: IngressLogRecord): IngressLogRecord | null {
  if (typeof e.sandboxId !== 'string' || e.sandboxId === '' || !Number.isFinite(e.at) || !Number.isInteger(e.port)) return null;
  const path = e.path.length > INGRESS_LOG_MAX_PATH ? `${e.path.slice(0, INGRESS_LOG_MAX_PATH - 1)}…` : e.path;
  return { ...e, path, method: e.method.slice(0, 32), client: e.client.slice(0, 64), bytes: Math.max(0, Math.floor(e.bytes)), durationMs: Math.max(0, e.durationMs) };
}

/**
 * The newest entries of the ingress log of `sandboxId`, newest first (at most `limit`, clamped to
 * 1-1000), and how often requests woke it.
 * @throws RamifyError `SANDBOX_NOT_FOUND` (also when killed).
 */
export async function getIngressLog(core: Core, sandboxId: string, input: { limit?: number } = {}): Promise<IngressLogResponse> {
  const record = await loadSandbox(core, sandboxId);
  assertNotKilled(sandboxId, record.state);
  await core.ingressLog.flush();
  const limit = Math.min(Math.max(Math.floor(input.limit ?? INGRESS_LOG_DEFAULT_LIMIT), 1), INGRESS_LOG_MAX_LIMIT);
  const wakes = await core.store.getIngressWakes(sandboxId);
  return {
    entries: (await core.store.listIngressLog(sandboxId, limit)).map(toIngressLogEntry),
    wakeups: wakes.count,
    lastWakeAt: wakes.lastAt === null ? null : new Date(wakes.lastAt).toISOString(),
  };
}

/** The API shape of a stored entry (`at` as an ISO-8601 string). */
export function toIngressLogEntry(r: IngressLogRecord): IngressLogEntry {
  return { at: new Date(r.at).toISOString(), client: r.client, method: r.method, path: r.path, port: r.port, status: r.status, bytes: r.bytes, durationMs: r.durationMs, woke: r.woke };
}
