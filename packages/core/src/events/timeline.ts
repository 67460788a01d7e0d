/**
 * Use-case: a sandbox's timeline, the audit trail of what it (and its agent) did: its lifecycle events,
 * the commands run in it (with exit code and duration), and its egress and ingress decisions, merged by
 * time. The window is the newest `limit` entries of all four together; `order` shows them newest first
 * (default) or oldest first. A killed sandbox keeps its events and commands (until their retention); the
 * store drops its egress and ingress logs at the kill.
 */
import { TIMELINE_DEFAULT_LIMIT, type CommandLogEntry, type TimelineEntry } from '@ramify/contracts';
import { toEgressLogEntry } from '../egress/egress-log.js';
import { toIngressLogEntry } from '../ingress/ingress-log.js';
import type { Core } from '../context.js';
import { loadSandbox } from '../lifecycle/records.js';
import type { CommandLogRecord } from '../ports/event-store.js';
import { toSandboxEvent } from './list.js';

/** The API shape of a command log entry. */
export function toCommandLogEntry(r: CommandLogRecord): CommandLogEntry {
  return { at: new Date(r.at).toISOString(), pid: r.pid, cmd: r.cmd, exitCode: r.exitCode, signal: r.signal, error: r.error, durationMs: r.durationMs, keyId: r.keyId };
}

/**
 * The timeline of `sandboxId` (its team already checked by the caller: the route's scope hook).
 * @throws RamifyError `SANDBOX_NOT_FOUND`.
 */
export async function getTimeline(core: Core, sandboxId: string, input: { limit?: number; order?: 'asc' | 'desc' } = {}): Promise<TimelineEntry[]> {
  const record = await loadSandbox(core, sandboxId);
  const limit = input.limit ?? TIMELINE_DEFAULT_LIMIT;
  await Promise.all([core.eventLog.flush(), core.commandLog.flush(), core.egressLog.flush(), core.ingressLog.flush()]);
  const [events, commands, egress, ingress] = await Promise.all([
    core.store.listEvents({ teamId: record.teamId, sandboxId, order: 'desc', limit }),
    core.store.listCommandLog(sandboxId, limit),
    core.store.listEgressLog(sandboxId, limit),
    core.store.listIngressLog(sandboxId, limit),
  ]);
  const entries: Array<{ ms: number; order: number; entry: TimelineEntry }> = [
    ...events.map((e) => ({ ms: e.at, order: e.seq, entry: { kind: 'lifecycle' as const, at: new Date(e.at).toISOString(), event: toSandboxEvent(e) } })),
    ...commands.map((c) => ({ ms: c.at, order: 0, entry: { kind: 'command' as const, at: new Date(c.at).toISOString(), command: toCommandLogEntry(c) } })),
    ...egress.map((e) => ({ ms: e.at, order: 0, entry: { kind: 'egress' as const, at: new Date(e.at).toISOString(), egress: toEgressLogEntry(e) } })),
    ...ingress.map((e) => ({ ms: e.at, order: 0, entry: { kind: 'ingress' as const, at: new Date(e.at).toISOString(), ingress: toIngressLogEntry(e) } })),
  ];
  // Newest first (events of one millisecond by their sequence), cut to the window, then in the order asked.
  entries.sort((a, b) => b.ms - a.ms || b.order - a.order);
  const window = entries.slice(0, limit).map((e) => e.entry);
  return input.order === 'asc' ? window.reverse() : window;
}
