/**
 * The egress log sink core provides: enforcement calls {@link BufferedEgressLog.record} on its packet and
 * DNS paths, so recording only validates and appends to an in-memory buffer (never blocks, never throws);
 * batches go to the store as {@link BufferedLog} describes.
 */
import type { Clock } from '../ports/clock.js';
import type { EgressLogSink, EgressVerdict } from '../ports/egress.js';
import type { Logger } from '../ports/logger.js';
import type { EgressLogRecord, Store } from '../ports/store.js';
import { BufferedLog, DEFAULT_LOG_BUFFER, type BufferedLogStats } from '../log/buffered-log.js';

export interface BufferedEgressLogOptions {
  store: Pick<Store, 'appendEgressLog'>;
  logger: Logger;
  /** Stamps a verdict whose `at` is not a valid date. */
  clock: Clock;
  /** Write pending entries this long after the first one arrived, ms. Default 100. */
  flushIntervalMs?: number;
  /** Write at once when this many entries are pending. Default 500. */
  batchSize?: number;
  /** At most this many entries wait in memory; more are dropped (and counted). Default 20000. */
  maxPending?: number;
}

/** Defaults of {@link BufferedEgressLogOptions}. */
export const DEFAULT_EGRESS_LOG_BUFFER = DEFAULT_LOG_BUFFER;

/** Counters for diagnostics. */
export type EgressLogStats = BufferedLogStats;

const PROTOCOLS: ReadonlySet<string> = new Set(['tcp', 'udp', 'icmp', 'dns']);
const DNS_ERRORS: ReadonlySet<string> = new Set(['NXDOMAIN', 'SERVFAIL']);
const VERDICTS: ReadonlySet<string> = new Set(['allowed', 'denied']);

export class BufferedEgressLog extends BufferedLog<EgressVerdict, EgressLogRecord> implements EgressLogSink {
  constructor(options: BufferedEgressLogOptions) {
    const { store, clock, ...tunables } = options;
    super({ ...tunables, name: 'egress log', write: (batch) => store.appendEgressLog(batch) }, (v) => toRecord(v, clock));
  }
}

/** The stored shape of a verdict, or null when it is malformed (unknown protocol or verdict, no sandbox id). */
function toRecord(v: EgressVerdict, clock: Clock): EgressLogRecord | null {
  if (typeof v.sandboxId !== 'string' || v.sandboxId === '' || !PROTOCOLS.has(v.protocol) || !VERDICTS.has(v.verdict)) return null;
  const parsed = typeof v.at === 'string' ? Date.parse(v.at) : Number.NaN;
  return {
    sandboxId: v.sandboxId,
    at: Number.isFinite(parsed) ? parsed : clock.now(),
    protocol: v.protocol,
    destination: typeof v.destination === 'string' ? v.destination : '',
    port: typeof v.port === 'number' && Number.isInteger(v.port) ? v.port : null,
    name: typeof v.name === 'string' ? v.name : null,
    verdict: v.verdict,
    rule: typeof v.rule === 'string' ? v.rule : null,
    ...(v.peer && typeof v.peer.sandboxId === 'string' ? { peer: { sandboxId: v.peer.sandboxId, network: typeof v.peer.network === 'string' ? v.peer.network : null } } : {}),
    ...(typeof v.error === 'string' && DNS_ERRORS.has(v.error) ? { error: v.error } : {}),
  };
}
