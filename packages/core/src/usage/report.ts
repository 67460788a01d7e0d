/**
 * Use-case: the usage report of a team (`GET /v1/usage`): metered amounts of its sandboxes over a window of
 * whole UTC hours, grouped by sandbox, fork tree (its root's id), template, team or UTC day. The amounts
 * written to the store, plus the live sandboxes' time not written yet (exact up to now).
 */
import { invalidField, quote, type UsageGroupBy, type UsageQuery, type UsageResponse, type UsageRow } from '@ramify/contracts';
import type { Core } from '../context.js';
import type { SandboxRecord, UsageAmounts } from '../ports/store.js';
import { defaultListedStates } from '../lifecycle/state-machine.js';
import { hourCeil, hourOf } from './accrual.js';
import { addAmounts, noAmounts, toFigures, unwrittenTime } from './totals.js';

/** Default window: the 30 days before `to`. */
export const DEFAULT_USAGE_WINDOW_MS = 30 * 86_400_000;

/**
 * A query time: ms since the epoch (digits), or an ISO 8601 date or time (`2025-07-01`, `2025-07-01T12:00:00Z`).
 * @throws RamifyError `VALIDATION_FAILED` for anything else: `details.issues` path `query.<field>`, as a
 *   schema's issue (issue-messages.ts); `details.field` `<field>` kept for older clients.
 */
export function parseQueryTime(value: string, field: string): number {
  const ms = /^\d{1,16}$/.test(value) ? Number(value) : /^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw invalidField(`query.${field}`, `must be an ISO 8601 time (2025-07-01 or 2025-07-01T12:00:00Z) or ms since the epoch, got ${quote(value)}`, { field });
  }
  return ms;
}

/** One group being summed. */
interface Group {
  amounts: UsageAmounts;
  sandboxes: Set<string>;
}

const dayOf = (hour: number): string => new Date(hour).toISOString().slice(0, 10);

/**
 * The team's usage.
 * @throws RamifyError `VALIDATION_FAILED` (a malformed `from`/`to`, `from` not before `to`).
 */
export async function getUsage(core: Core, teamId: string, query: UsageQuery): Promise<UsageResponse> {
  const now = core.clock.now();
  const to = query.to === undefined ? now : parseQueryTime(query.to, 'to');
  const from = query.from === undefined ? to - DEFAULT_USAGE_WINDOW_MS : parseQueryTime(query.from, 'from');
  if (from >= to) {
    const got = query.from === undefined ? 'the default, 30 days before to' : quote(query.from);
    throw invalidField('query.from', `must be before to (${new Date(to).toISOString()}), got ${got}`, { field: 'from' });
  }
  const groupBy: UsageGroupBy = query.groupBy ?? 'sandbox';
  const fromHour = hourOf(from);
  const toHour = hourCeil(to);
  const sandboxIds = query.sandboxId === undefined ? undefined : [query.sandboxId];
  const sums = await core.store.sumUsage({ teamId, sandboxIds, fromHour, toHour, byDay: groupBy === 'day' });
  const live = await liveSandboxes(core, teamId, query.sandboxId);
  const unwritten = await unwrittenTime(core, live, Math.min(now, toHour));
  const ids = [...new Set([...sums.map((s) => s.sandboxId), ...unwritten.keys()])];
  const roots = groupBy === 'tree' ? await core.store.treeRoots(ids) : new Map<string, string>();
  const keyOf = (s: { sandboxId: string; templateId: string; teamId: string }, day: string | null): string =>
    groupBy === 'sandbox' ? s.sandboxId : groupBy === 'tree' ? (roots.get(s.sandboxId) ?? s.sandboxId) : groupBy === 'template' ? s.templateId : groupBy === 'team' ? s.teamId : (day ?? '');
  const groups = new Map<string, Group>();
  const add = (key: string, sandboxId: string, amounts: Partial<UsageAmounts>): void => {
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { amounts: noAmounts(), sandboxes: new Set() }));
    addAmounts(g.amounts, amounts);
    g.sandboxes.add(sandboxId);
  };
  for (const s of sums) add(keyOf(s, s.day), s.sandboxId, s);
  for (const r of live) {
    for (const h of unwritten.get(r.id) ?? []) {
      if (h.hour < fromHour || h.hour >= toHour) continue;
      add(keyOf({ sandboxId: r.id, templateId: r.templateId, teamId: r.teamId }, dayOf(h.hour)), r.id, h);
    }
  }
  const rows: UsageRow[] = [...groups].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, g]) => ({ key, sandboxes: g.sandboxes.size, ...toFigures(g.amounts) }));
  return { from: new Date(fromHour).toISOString(), to: new Date(toHour).toISOString(), groupBy, team: teamId, rows };
}

/** The team's sandboxes that may have time not written yet (every state but killed), or just `sandboxId`. */
async function liveSandboxes(core: Core, teamId: string, sandboxId: string | undefined): Promise<SandboxRecord[]> {
  if (sandboxId !== undefined) {
    const record = await core.store.getSandbox(sandboxId);
    return record && record.teamId === teamId ? [record] : [];
  }
  const out: SandboxRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await core.store.listSandboxes({ teamId, states: defaultListedStates(), limit: 1000, cursor });
    out.push(...page.sandboxes);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

