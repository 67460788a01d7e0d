/**
 * Egress log rows: the verdicts host enforcement recorded, per sandbox, bounded as {@link BoundedLogRows}
 * describes (the newest `maxEntries` per sandbox).
 */
import type { EgressLogRecord } from '@ramify/core';
import type { Executor } from './schema.js';
import { BoundedLogRows } from './bounded-log.js';

/** Default number of entries kept per sandbox. */
export const DEFAULT_EGRESS_LOG_MAX_ENTRIES = 1000;

const fromRow = (r: Record<string, unknown>): EgressLogRecord => ({
  // Only entries about a connection between two sandboxes carry a peer.
  sandboxId: r.sandbox_id as string,
  at: r.at as number,
  protocol: r.protocol as EgressLogRecord['protocol'],
  destination: r.destination as string,
  port: r.port as number | null,
  name: r.name as string | null,
  verdict: r.verdict as EgressLogRecord['verdict'],
  rule: r.rule as string | null,
  ...(typeof r.peer_sandbox_id === 'string' ? { peer: { sandboxId: r.peer_sandbox_id, network: (r.peer_network as string | null) ?? null } } : {}),
});

/** The egress log table (migration 4; the peer columns: migration 17). */
export class EgressLogRows extends BoundedLogRows<EgressLogRecord> {
  constructor(db: Executor, maxEntries: number) {
    super(db, {
      table: 'egress_log',
      toRow: (e) => ({
        sandbox_id: e.sandboxId, at: e.at, protocol: e.protocol, destination: e.destination, port: e.port, name: e.name, verdict: e.verdict, rule: e.rule,
        peer_sandbox_id: e.peer?.sandboxId ?? null, peer_network: e.peer?.network ?? null,
      }),
      fromRow,
    }, maxEntries);
  }
}
