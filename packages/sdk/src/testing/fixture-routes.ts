/** HTTP routes of the protocol fixture (see `contract-server.ts`), one entry per row of the route table. */
import type { ServerResponse } from 'node:http';
import {
  RamifyError, ResultCapture, type AuditEntry, type CommandRequest, type CreateSandboxRequest, type EgressPolicyRequest, type SandboxInfo, type SandboxState, type TemplateBuildEvent,
  type TemplateInfo, type TemplateSpec,
} from '@ramify/contracts';
import type { FixtureReply, FixtureRequest } from './contract-server.js';
import { checkEgress, type FixtureState } from './fixture-state.js';
import { portRoutes } from './fixture-ports.js';

interface Route {
  method: string;
  pattern: RegExp;
  handler: (req: FixtureRequest, res: ServerResponse) => Promise<FixtureReply>;
}

const ok = (json: unknown, status = 200): FixtureReply => ({ status, json });
const noContent: FixtureReply = { status: 204 };

function requirePath(req: FixtureRequest): string {
  const p = req.query.get('path');
  if (!p) throw new RamifyError('VALIDATION_FAILED', 'path is required');
  return p;
}

/**
 * A page of the fixture's fixed audit log, newest first, as the daemon pages it (`limit`, `before`,
 * `anonymous`): the team's five calls numbered 1-5, and two calls without a valid key numbered 1-2 on
 * their own (docs/design/TEAMS.md, "Audit ids").
 */
function auditPage(query: URLSearchParams): AuditEntry[] {
  const anonymous = query.get('anonymous') === 'true';
  const count = anonymous ? 2 : 5;
  const before = Number(query.get('before') ?? count + 1);
  const limit = Number(query.get('limit') ?? 100);
  const entries: AuditEntry[] = [];
  for (let id = Math.min(before - 1, count); id >= 1 && entries.length < limit; id -= 1) {
    entries.push({
      id, at: new Date(Date.UTC(2026, 0, 1, 0, id)).toISOString(), apiKeyId: anonymous ? null : 'key_fixture', team: anonymous ? null : 'default', method: 'POST', path: '/v1/sandboxes',
      action: 'sandbox.create', sandboxId: null, status: anonymous ? 401 : 201, errorCode: anonymous ? 'UNAUTHORIZED' : null, tool: null,
    });
  }
  return entries;
}

/** The fixture's route table. */
export function httpRoutes(state: FixtureState): Route[] {
  const S = '/v1/sandboxes/([^/]+)';
  const route = (method: string, path: string, handler: Route['handler']): Route => ({ method, pattern: new RegExp(`^${path}$`), handler });
  const sbx = (req: FixtureRequest) => state.get(req.params[0]);
  const running = (req: FixtureRequest) => state.inState(req.params[0], ['running']);
  const notKilled = (req: FixtureRequest) => {
    const s = sbx(req);
    if (s.info.state === 'killed') throw new RamifyError('SANDBOX_NOT_FOUND', `sandbox '${s.info.id}' not found (it was killed)`);
    return s;
  };

  return [
    route('GET', '/v1/health', async () => ok({ ok: true, version: 'fixture', runtimes: ['gvisor'], runtimeInfo: { gvisor: 'fixture' }, unavailableRuntimes: {} })),
    route('POST', '/v1/sandboxes', async (req) => {
      const body = await req.json<CreateSandboxRequest>();
      if (body.template && body.snapshot) throw new RamifyError('VALIDATION_FAILED', 'template and snapshot are mutually exclusive');
      return ok(state.create(body).info, 201);
    }),
    route('GET', '/v1/sandboxes', async (req) => {
      const states = (req.query.get('state')?.split(',') ?? []) as SandboxState[];
      const meta = new URLSearchParams(req.query.get('metadata') ?? '');
      let all: SandboxInfo[] = [...state.sandboxes.values()].map((s) => s.info)
        .filter((i) => (states.length ? states.includes(i.state) : i.state !== 'killed'))
        .filter((i) => [...meta].every(([k, v]) => i.metadata[k] === v));
      const start = Number(req.query.get('nextToken') ?? 0);
      const limit = Number(req.query.get('limit') ?? 100);
      all = all.slice(start);
      const page = all.slice(0, limit);
      return ok({ sandboxes: page, nextToken: all.length > limit ? String(start + limit) : null });
    }),
    route('GET', S, async (req) => ok(sbx(req).info)),
    route('DELETE', S, async (req) => { sbx(req).info.state = 'killed'; return noContent; }),
    route('POST', `${S}/pause`, async (req) => {
      const s = running(req);
      s.info.state = 'paused';
      s.info.endAt = null;
      for (const p of s.processes.values()) p.goAway();
      return ok(s.info);
    }),
    route('POST', `${S}/resume`, async (req) => {
      const s = state.inState(req.params[0], ['paused']);
      s.info.state = 'running';
      s.info.endAt = new Date(Date.now() + ((await req.json<{ timeoutMs?: number }>()).timeoutMs ?? s.info.timeoutMs)).toISOString();
      return ok(s.info);
    }),
    route('POST', `${S}/fork`, async (req) => {
      const parent = state.inState(req.params[0], ['running', 'paused']);
      const { count } = await req.json<{ count: number }>();
      return ok({ sandboxes: Array.from({ length: count }, () => state.create({}, parent).info) }, 201);
    }),
    route('POST', `${S}/snapshots`, async (req) => ok(state.snapshot(sbx(req), (await req.json<{ name: string }>()).name), 201)),
    route('POST', `${S}/timeout`, async (req) => {
      const s = sbx(req);
      s.info.timeoutMs = (await req.json<{ timeoutMs: number }>()).timeoutMs;
      s.info.endAt = new Date(Date.now() + s.info.timeoutMs).toISOString();
      return ok(s.info);
    }),
    route('GET', `${S}/egress`, async (req) => {
      const { egress } = notKilled(req);
      return ok({ rules: egress?.rules ?? [], mode: egress?.mode ?? 'open', updatedAt: egress?.updatedAt ?? null });
    }),
    route('PUT', `${S}/egress`, async (req) => {
      const s = notKilled(req);
      s.egress = { ...checkEgress(await req.json<EgressPolicyRequest>()), updatedAt: new Date().toISOString() };
      return ok({ rules: s.egress.rules, mode: s.egress.mode, updatedAt: s.egress.updatedAt });
    }),
    route('GET', `${S}/egress/log`, async (req) => { notKilled(req); return ok({ entries: [] }); }),
    route('POST', `${S}/commands`, async (req) => {
      const body = await req.json<CommandRequest>();
      const proc = state.startProcess(running(req), body);
      if (body.background) return ok({ pid: proc.pid });
      const capture = new ResultCapture(state.maxOutputBytes);
      await new Promise<void>((resolve) => proc.subscribe({ onData: (channel, bytes) => capture.push(channel, bytes), onExit: () => resolve(), drop: async () => undefined, goAway: () => false }, { stdout: 0, stderr: 0 }));
      capture.end();
      const exit = proc.exit ?? { exitCode: null, signal: null, error: null };
      return ok({ pid: proc.pid, ...exit, ...capture.result() });
    }),
    route('GET', `${S}/processes`, async (req) => ok({ processes: [...sbx(req).processes.values()].map((p) => p.info()) })),
    route('POST', `${S}/processes/(\\d+)/stdin`, async (req) => {
      state.process(sbx(req), Number(req.params[1])).writeStdin(await req.body());
      return noContent;
    }),
    route('POST', `${S}/processes/(\\d+)/stdin/close`, async (req) => { state.process(sbx(req), Number(req.params[1])).closeStdin(); return noContent; }),
    route('POST', `${S}/processes/(\\d+)/signal`, async (req) => {
      const proc = state.process(sbx(req), Number(req.params[1]));
      proc.signal((await req.json<{ signal: string }>()).signal);
      return noContent;
    }),
    route('GET', `${S}/processes/(\\d+)/wait`, async (req) => {
      const proc = state.process(sbx(req), Number(req.params[1]));
      await new Promise<void>((resolve) => proc.subscribe({ onData: () => undefined, onExit: () => resolve(), drop: async () => undefined, goAway: () => false }, { stdout: Infinity, stderr: Infinity }));
      return ok(proc.exit);
    }),
    route('GET', `${S}/files`, async (req, res) => {
      const s = running(req);
      const path = requirePath(req);
      if (state.stat(s, path).type === 'dir') throw new RamifyError('IS_A_DIRECTORY', `'${path}' is a directory`);
      const bytes = s.files.get(path) ?? new Uint8Array();
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.byteLength });
      for (let i = 0; i < bytes.byteLength; i += 64 * 1024) res.write(bytes.subarray(i, i + 64 * 1024));
      res.end();
      return { handled: true };
    }),
    route('PUT', `${S}/files`, async (req) => ok(state.writeFile(running(req), requirePath(req), await req.body()))),
    route('GET', `${S}/files/list`, async (req) => ok({ entries: state.list(running(req), requirePath(req), Number(req.query.get('depth') ?? 1)) })),
    route('GET', `${S}/files/stat`, async (req) => ok(state.stat(running(req), requirePath(req)))),
    route('POST', `${S}/files/mkdir`, async (req) => ok(state.mkdir(running(req), (await req.json<{ path: string }>()).path))),
    route('POST', `${S}/files/remove`, async (req) => { state.remove(running(req), (await req.json<{ path: string }>()).path); return noContent; }),
    route('POST', `${S}/files/rename`, async (req) => {
      const { from, to } = await req.json<{ from: string; to: string }>();
      return ok(state.rename(running(req), from, to));
    }),
    route('GET', '/v1/snapshots', async () => ok({ snapshots: [...state.snapshots.values()] })),
    route('GET', '/v1/snapshots/([^/]+)', async (req) => ok(state.findSnapshot(req.params[0]))),
    route('DELETE', '/v1/snapshots/([^/]+)', async (req) => {
      if (!state.snapshots.delete(req.params[0])) throw new RamifyError('SNAPSHOT_NOT_FOUND', `snapshot '${req.params[0]}' not found`);
      return noContent;
    }),
    route('GET', '/v1/templates', async () => ok({ templates: [...state.templates.values()] })),
    route('POST', '/v1/templates', async (req, res) => {
      const spec = await req.json<TemplateSpec>();
      if (spec.files?.some((f) => f.source !== undefined || f.content === undefined)) {
        throw new RamifyError('VALIDATION_FAILED', 'files[] must carry inlined content (the client reads `source` files)');
      }
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      const send = (e: TemplateBuildEvent): boolean => res.write(`${JSON.stringify(e)}\n`);
      const steps = ['base', ...(spec.packages?.length ? ['packages'] : []), ...(spec.files ?? []).map((f) => `file ${f.path}`), ...(spec.run ?? [])];
      for (const [i, step] of steps.entries()) {
        send({ type: 'step', step, index: i + 1, total: steps.length, cached: state.templates.has(spec.name) });
        if (step.startsWith('fail')) {
          send({ type: 'error', code: 'VALIDATION_FAILED', message: `step '${step}' failed` });
          res.end();
          return { handled: true };
        }
        send({ type: 'log', line: `ran ${step}` });
      }
      const template: TemplateInfo = {
        id: `tpl_${spec.name}`, name: spec.name, runtime: 'gvisor', specHash: JSON.stringify(spec).length.toString(16), snapshotId: `snap_${spec.name}`,
        images: [{ runtime: 'gvisor', snapshotId: `snap_${spec.name}` }],
        parent: spec.from ?? null, envs: { ...(spec.from === undefined ? {} : state.templates.get(spec.from)?.envs), ...spec.envs },
        sizeBytes: 1 << 20, createdAt: new Date().toISOString(), team: 'default',
      };
      state.templates.set(spec.name, template);
      send({ type: 'done', template, elapsedMs: 1 });
      res.end();
      return { handled: true };
    }),
    route('GET', '/v1/audit', async (req) => ok({ entries: auditPage(req.query) })),
    ...portRoutes.map((r) => route(r.method, `${S}${r.rest}`, async (req) => r.handler(notKilled(req), req))),
    ...state.budgets.routes().map((r) => route(r.method, `${S}${r.rest}`, async (req) => r.handler(notKilled(req), () => req.json()))),
  ];
}
