/**
 * Use-case: list sandboxes, filtered by state and metadata, paginated by an opaque cursor.
 */
import { SandboxState, invalidField, quote, type ListSandboxesResponse } from '@ramify/contracts';
import type { Core } from '../context.js';
import type { SandboxRecord } from '../ports/store.js';
import { toSandboxInfo } from './records.js';
import { defaultListedStates } from './state-machine.js';

export interface ListSandboxesInput {
  /** Only this team's sandboxes (the API always passes the caller's); absent: every team's. */
  teamId?: string;
  /** Default: every state but `killed`. */
  states?: SandboxState[];
  /** All pairs must match. */
  metadata?: Record<string, string>;
  /** Default 100, max 1000. */
  limit?: number;
  /** `nextToken` of the previous page. */
  nextToken?: string;
}

/**
 * Parse the query-string form (`state=running,paused`, `metadata=k%3Dv%26k2%3Dv2`) into {@link ListSandboxesInput}.
 * @throws RamifyError `VALIDATION_FAILED` naming the unknown state or the malformed pair (`details.issues`
 *   as the schema's, issue-messages.ts; `details.field` `state`/`metadata` kept for older clients).
 */
export function parseListQuery(query: { state?: string; metadata?: string; limit?: number; nextToken?: string }): ListSandboxesInput {
  const input: ListSandboxesInput = { limit: query.limit, nextToken: query.nextToken };
  if (query.state !== undefined && query.state !== '') {
    input.states = query.state.split(',').map((raw) => {
      const parsed = SandboxState.safeParse(raw.trim());
      if (!parsed.success) throw invalidField('query.state', `must be states from ${SandboxState.options.join(', ')}, comma-separated, got ${quote(raw)}`, { field: 'state' });
      return parsed.data;
    });
  }
  if (query.metadata !== undefined && query.metadata !== '') {
    const pairs = new URLSearchParams(query.metadata);
    const metadata: Record<string, string> = {};
    for (const [key, value] of pairs) {
      if (key === '') throw invalidField('query.metadata', `must be key=value pairs joined by & (URL-encoded) with no empty key, got ${quote(query.metadata)}`, { field: 'metadata' });
      metadata[key] = value;
    }
    input.metadata = metadata;
  }
  return input;
}

/**
 * One page of sandboxes, oldest first.
 * @throws RamifyError `VALIDATION_FAILED` for a malformed `nextToken`.
 */
export async function listSandboxes(core: Core, input: ListSandboxesInput): Promise<ListSandboxesResponse> {
  const page = await core.store.listSandboxes({
    ...(input.teamId !== undefined ? { teamId: input.teamId } : {}),
    states: input.states ?? defaultListedStates(),
    metadata: input.metadata,
    limit: input.limit ?? 100,
    cursor: input.nextToken,
  });
  return { sandboxes: page.sandboxes.map((r: SandboxRecord) => toSandboxInfo(r, core.options.ingress)), nextToken: page.nextCursor };
}
