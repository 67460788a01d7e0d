/**
 * The audit log: one entry per mutating API call (who, what, when, outcome).
 */
import type { AuditEntry } from '@ramify/contracts';
import type { AuditQuery, AuditRecord, Store } from '../ports/store.js';

/** Append one entry; never throws (a failed audit write is returned as false for the caller to log). */
export async function recordAudit(store: Store, entry: Omit<AuditRecord, 'id'>): Promise<boolean> {
  try {
    await store.appendAudit(entry);
    return true;
  } catch {
    return false;
  }
}

/** Entries, newest first, in API shape (`query.teamId`: only that team's; the API always passes the caller's). */
export async function listAudit(store: Store, query: AuditQuery): Promise<AuditEntry[]> {
  return (await store.listAudit(query)).map(({ teamId, ...r }) => ({ ...r, team: teamId, at: new Date(r.at).toISOString() }));
}
