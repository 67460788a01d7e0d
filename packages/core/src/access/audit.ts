/**
 * The audit log: one entry per mutating API call (who, what, when, outcome).
 */
import type { AuditEntry } from '@ramify/contracts';
import type { AuditRecord, Store } from '../ports/store.js';

/** Append one entry; never throws (a failed audit write is returned as false for the caller to log). */
export async function recordAudit(store: Store, entry: Omit<AuditRecord, 'seq' | 'teamSeq'>): Promise<boolean> {
  try {
    await store.appendAudit(entry);
    return true;
  } catch {
    return false;
  }
}

/** The API shape of a stored entry: `id` is its number in its stream (`teamSeq`), never the global `seq`. */
export function toAuditEntry({ seq: _seq, teamSeq, teamId, ...r }: AuditRecord): AuditEntry {
  return { ...r, id: teamSeq, team: teamId, at: new Date(r.at).toISOString() };
}

/**
 * One page of a stream, newest first, in API shape: the team's entries (`teamId`: the API always passes the
 * caller's) or (null) those of calls that carried no valid key. `before`: an id of that stream, only entries
 * numbered below it. Ids are per stream (docs/design/TEAMS.md, "Audit ids"), so a page never shows, nor an id
 * reveals, another stream's entries, and a cursor can only move within the caller's own stream.
 */
export async function listAudit(store: Store, query: { teamId: string | null; limit?: number; sandboxId?: string; before?: number }): Promise<AuditEntry[]> {
  const { before, ...rest } = query;
  return (await store.listAudit({ ...rest, ...(before !== undefined ? { beforeTeamSeq: before } : {}) })).map(toAuditEntry);
}
