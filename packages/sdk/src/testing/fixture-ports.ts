/**
 * The protocol fixture's port routes (see `contract-server.ts`): expose, unexpose, list, a port's URL,
 * autoResume, autoPause and the ingress log, with the daemon's validation of ports and idle times. Port
 * URLs point at a fixed endpoint (`localhost:7424`, http); the fixture serves no ingress.
 */
import { MAX_AUTO_PAUSE_IDLE_MS, MIN_AUTO_PAUSE_IDLE_MS, RamifyError, type AutoPause, type IngressEndpoint, type PortAccess, type PortInfo, type PortSpec, type SandboxInfo } from '@ramify/contracts';
import type { FixtureReply, FixtureRequest } from './contract-server.js';
import type { FixtureSandbox } from './fixture-state.js';

/** Where the fixture's port URLs point. */
export const FIXTURE_INGRESS: IngressEndpoint = { domain: 'localhost', port: 7424, protocol: 'http' };
/** The one access token of every fixture sandbox. */
export const FIXTURE_TOKEN = `rit_${'f'.repeat(43)}`;

interface PortRoute {
  method: string;
  /** Path after `/v1/sandboxes/<id>`, as a regular expression. */
  rest: string;
  handler: (s: FixtureSandbox, req: FixtureRequest) => Promise<FixtureReply>;
}

const ok = (json: unknown, status = 200): FixtureReply => ({ status, json });

function checkPort(value: unknown): number {
  const port = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) throw new RamifyError('VALIDATION_FAILED', `port ${JSON.stringify(value)} is not a port: a port is an integer from 1 to 65535`, { field: 'port' });
  return port;
}

function checkAutoPause(value: AutoPause | null | undefined): AutoPause | null {
  if (value === null || value === undefined) return null;
  if (!Number.isInteger(value.idleMs) || value.idleMs < MIN_AUTO_PAUSE_IDLE_MS || value.idleMs > MAX_AUTO_PAUSE_IDLE_MS) throw new RamifyError('VALIDATION_FAILED', 'autoPause.idleMs is out of range', { field: 'autoPause.idleMs' });
  return { idleMs: value.idleMs };
}

/** What a create request gives of ports, autoResume and autoPause, validated. */
export function startingPorts(req: { ports?: PortSpec[]; autoResume?: boolean; autoPause?: AutoPause | null }): Pick<SandboxInfo, 'ports' | 'autoResume' | 'autoPause' | 'ingress'> {
  const ports = (req.ports ?? []).map((p) => (typeof p === 'number' ? { port: checkPort(p), access: 'token' as const } : { port: checkPort(p.port), access: p.access ?? 'token' }));
  return { ports: ports.sort((a, b) => a.port - b.port), autoResume: req.autoResume ?? ports.length > 0, autoPause: checkAutoPause(req.autoPause), ingress: FIXTURE_INGRESS };
}

const hostOf = (id: string, port: number): string => `${port}-${id.toLowerCase()}.${FIXTURE_INGRESS.domain}:${FIXTURE_INGRESS.port}`;
const portInfo = (id: string, p: { port: number; access: PortAccess }): PortInfo => ({ ...p, host: hostOf(id, p.port), url: `http://${hostOf(id, p.port)}/` });
const portsInfo = (s: FixtureSandbox) => ({ ports: s.info.ports.map((p) => portInfo(s.info.id, p)), autoResume: s.info.autoResume });

/** The port routes, relative to a sandbox's path; `s` is the (not killed) sandbox. */
export const portRoutes: PortRoute[] = [
  { method: 'GET', rest: '/ports', handler: async (s) => ok(portsInfo(s)) },
  {
    method: 'PUT', rest: '/ports/([^/]+)', handler: async (s, req) => {
      const port = checkPort(req.params[1]);
      const body = await req.json<{ access?: PortAccess } | undefined>();
      const access = body?.access ?? 'token';
      if (access !== 'token' && access !== 'public') throw new RamifyError('VALIDATION_FAILED', `access '${String(access)}' is not token or public`, { field: 'access' });
      s.info.ports = [...s.info.ports.filter((p) => p.port !== port), { port, access }].sort((a, b) => a.port - b.port);
      return ok(portInfo(s.info.id, { port, access }));
    },
  },
  {
    method: 'DELETE', rest: '/ports/([^/]+)', handler: async (s, req) => {
      const port = checkPort(req.params[1]);
      s.info.ports = s.info.ports.filter((p) => p.port !== port);
      return { status: 204 };
    },
  },
  {
    method: 'GET', rest: '/ports/([^/]+)/url', handler: async (s, req) => {
      const port = checkPort(req.params[1]);
      const exposed = s.info.ports.find((p) => p.port === port);
      if (!exposed) throw new RamifyError('PORT_NOT_EXPOSED', `port ${port} of sandbox '${s.info.id}' is not exposed`, { id: s.info.id, port });
      const { host, url } = portInfo(s.info.id, exposed);
      return ok(exposed.access === 'token' ? { url, host, token: FIXTURE_TOKEN } : { url, host });
    },
  },
  {
    method: 'PUT', rest: '/auto-resume', handler: async (s, req) => {
      s.info.autoResume = (await req.json<{ autoResume: boolean }>()).autoResume;
      return ok(portsInfo(s));
    },
  },
  {
    method: 'PUT', rest: '/auto-pause', handler: async (s, req) => {
      s.info.autoPause = checkAutoPause((await req.json<{ autoPause: AutoPause | null }>()).autoPause);
      return ok(s.info);
    },
  },
  { method: 'GET', rest: '/ingress/log', handler: async () => ok({ entries: [], wakeups: 0, lastWakeAt: null }) },
];
