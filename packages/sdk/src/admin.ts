/**
 * Calls that are not about one sandbox: templates, snapshots, health, audit. Plain functions taking
 * {@link ConnectionOpts} last, like the `Sandbox` statics.
 */
import { ROUTES } from '@ramify/contracts/client';
import type { AuditEntry, RuntimeName, WarmPoolHealth, SnapshotInfo, TemplateBuildEvent, TemplateInfo, TemplateSpec } from '@ramify/contracts';
import { resolveConnection, type ConnectionOpts } from './connection.js';
import { ApiClient } from './http.js';
import { RamifyError, errorFromCode } from './errors.js';

const client = (opts: ConnectionOpts = {}): ApiClient => new ApiClient(resolveConnection(opts));

/**
 * `GET /v1/health` (no key needed). Liveness and runtimes: `runtimes` (names, the default first), `runtimeInfo` (name → one-line summary:
 * version, acceleration and why), `unavailableRuntimes` (name → why, what to install) and `pool` (the warm pool).
 */
export function getHealth(opts?: ConnectionOpts): Promise<{ ok: true; version: string; runtimes: string[]; runtimeInfo: Record<string, string>; unavailableRuntimes: Record<string, string>; pool: WarmPoolHealth }> {
  return client(opts).at(ROUTES.getHealth, {}).json();
}

/** All snapshots (template images, pause points, fork points, named snapshots). */
export async function listSnapshots(opts?: ConnectionOpts): Promise<SnapshotInfo[]> {
  return (await client(opts).at(ROUTES.listSnapshots, {}).json<{ snapshots: SnapshotInfo[] }>()).snapshots;
}

/** One snapshot by id or name (with `egress`, the policy a sandbox created from it starts with). Throws `SNAPSHOT_NOT_FOUND`. */
export function getSnapshot(snapshotId: string, opts?: ConnectionOpts): Promise<SnapshotInfo> {
  return client(opts).at(ROUTES.getSnapshot, { id: snapshotId }).json();
}

/** Delete a snapshot. Throws `SNAPSHOT_NOT_FOUND`, or `CONFLICT` while a sandbox still needs it. */
export function deleteSnapshot(snapshotId: string, opts?: ConnectionOpts): Promise<void> {
  return client(opts).at(ROUTES.deleteSnapshot, { id: snapshotId }).empty();
}

/** All built templates. */
export async function listTemplates(opts?: ConnectionOpts): Promise<TemplateInfo[]> {
  return (await client(opts).at(ROUTES.listTemplates, {}).json<{ templates: TemplateInfo[] }>()).templates;
}

/**
 * Delete a template (id or name) and its images. Throws `TEMPLATE_NOT_FOUND`, or `CONFLICT` naming the
 * running or paused sandboxes made from it (or templates built from it) that still need it.
 */
export function deleteTemplate(nameOrId: string, opts?: ConnectionOpts): Promise<void> {
  return client(opts).at(ROUTES.deleteTemplate, { id: nameOrId }).empty();
}

/** Options of {@link buildTemplate}. */
export interface BuildTemplateOpts extends ConnectionOpts {
  /** Every progress event, in order (`step`, `log`, then `done` or `error`). */
  onEvent?: (event: TemplateBuildEvent) => void;
  /** Abort the request (the daemon decides whether the build continues). */
  signal?: AbortSignal;
  /** Runtimes to build an image for; default every runtime the daemon has. */
  runtimes?: RuntimeName[];
}

/**
 * Build (or reuse from cache) a template. `spec.files[]` must carry `content` (the CLI inlines `source`
 * files). Resolves with the template on the `done` event; throws the build's error on an `error` event
 * (e.g. `VALIDATION_FAILED`, `TEMPLATE_NOT_FOUND` for a missing parent). No request deadline applies.
 */
export async function buildTemplate(spec: TemplateSpec, opts: BuildTemplateOpts = {}): Promise<TemplateInfo> {
  const { onEvent, signal, runtimes, ...conn } = opts;
  const query = runtimes && runtimes.length > 0 ? { runtime: runtimes.join(',') } : undefined;
  const res = await client(conn).at(ROUTES.buildTemplate, {}).request({ json: spec, timeoutMs: 0, ...(query ? { query } : {}), ...(signal ? { signal } : {}) });
  if (!res.body) throw new RamifyError('INTERNAL', 'template build returned no progress stream');
  const decoder = new TextDecoder();
  let buffered = '';
  const handle = (line: string): TemplateInfo | undefined => {
    if (!line.trim()) return undefined;
    const event = JSON.parse(line) as TemplateBuildEvent;
    onEvent?.(event);
    if (event.type === 'error') throw errorFromCode(event.code, event.message);
    return event.type === 'done' ? event.template : undefined;
  };
  for await (const chunk of res.body) {
    buffered += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const done = handle(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
      if (done) return done;
    }
  }
  const last = handle(buffered + decoder.decode());
  if (last) return last;
  throw new RamifyError('INTERNAL', 'template build stream ended without a result');
}

/** Options of {@link listAudit}. */
export interface ListAuditOpts {
  /** At most this many entries (1-1000, default 100). */
  limit?: number;
  sandboxId?: string;
  /** Paging backwards: only entries with an id below this one (the last id of the previous page). */
  before?: number;
  /** The log of calls that carried no valid key instead of the team's (the default team's admin keys only, else 403 `FORBIDDEN`). */
  anonymous?: boolean;
}

/**
 * Audit log entries, newest first: the key's team's (or, with `anonymous`, the calls without a valid key).
 * Ids are numbered per team (1, 2, 3, ...), so they count the team's own calls only; page with `before`.
 */
export async function listAudit(opts: ConnectionOpts & ListAuditOpts = {}): Promise<AuditEntry[]> {
  const { limit, sandboxId, before, anonymous, ...conn } = opts;
  return (await client(conn).at(ROUTES.listAudit, {}).json<{ entries: AuditEntry[] }>({ query: { limit, sandboxId, before, anonymous: anonymous ? 'true' : undefined } })).entries;
}
