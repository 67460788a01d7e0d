/**
 * Event ids, which are also the cursors of listings and streams (docs/design/EVENTS.md): per team.
 * `evt_<stream>_<n>`: `n` is the event's number in its team's stream (1, 2, 3, ...: `EventRecord.teamSeq`),
 * so a team that reads its cursors learns how many events *it* had, never how many other teams had (the
 * global order is internal). `<stream>` is 8 hex digits of a sha256 of the team id: it tells the streams
 * apart, so a cursor of another team's stream is refused (400 `INVALID_CURSOR`) instead of being read as a
 * position in the caller's. It is not a secret and guards nothing (every read is scoped to the caller's team
 * anyway); it only turns a mix-up into a clear error. Clients treat ids as opaque.
 */
import { createHash } from 'node:crypto';
import { RamifyError, quote } from '@ramify/contracts';

const streams = new Map<string, string>();

/** The stream tag of a team's events (8 hex digits). */
function streamOf(teamId: string): string {
  let tag = streams.get(teamId);
  if (tag === undefined) {
    tag = createHash('sha256').update(`ramify-events\u0000${teamId}`, 'utf8').digest('hex').slice(0, 8);
    if (streams.size > 10_000) streams.clear();
    streams.set(teamId, tag);
  }
  return tag;
}

/** The id of the team's `teamSeq`-th event. */
export const eventId = (teamId: string, teamSeq: number): string => `evt_${streamOf(teamId)}_${teamSeq}`;

const CURSOR = /^evt_([0-9a-f]{8})_([1-9][0-9]{0,15})$/;

/**
 * `INVALID_CURSOR` (400, its own code: clients tell a stale cursor from a bad request) in the layout of
 * every bad query field (contracts/src/issue-messages.ts): `query.after: <problem>` and `details.issues`.
 */
function cursorError(problem: string, cursor: string): RamifyError {
  return new RamifyError('INVALID_CURSOR', `query.after: ${problem}`, { cursor, issues: [{ path: 'query.after', message: problem }] });
}

/**
 * The team number `cursor` names in `teamId`'s stream.
 * @param last the team's last event number now: a cursor past it was never given out.
 * @throws RamifyError `INVALID_CURSOR` (400) when `cursor` is not an event id, is of another team's stream,
 *   or is past the team's newest event.
 */
export function teamSeqOf(teamId: string, cursor: string, last: number): number {
  const match = CURSOR.exec(cursor);
  if (!match) {
    throw cursorError(`must be an event's id or the nextCursor of a previous page (evt_..., as given; ids of events before an upgrade to per-team ids are no longer valid), got ${quote(cursor)}`, cursor.slice(0, 80));
  }
  const n = Number(match[2]);
  if (match[1] !== streamOf(teamId) || n > last) {
    throw cursorError(`must be one of this team's events (an id or nextCursor this key's team was given), got ${quote(cursor)}`, cursor);
  }
  return n;
}
