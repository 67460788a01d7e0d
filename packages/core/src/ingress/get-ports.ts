/**
 * Use-cases: read a sandbox's exposed ports with their URLs, and one port's URL (with the token for a
 * token port), in the API's shapes.
 */
import { RamifyError, type IngressEndpoint, type PortInfo, type PortsInfo, type PortUrlInfo } from '@ramify/contracts';
import type { Core } from '../context.js';
import { loadSandbox } from '../lifecycle/records.js';
import { assertNotKilled } from '../lifecycle/state-machine.js';
import type { SandboxRecord } from '../ports/store.js';
import { sandboxAccessToken } from './access-token.js';
import { checkPort, effectiveAutoResume, portHost, portUrl } from './ports.js';

/**
 * The ingress endpoint port URLs point at.
 * @throws RamifyError `RUNTIME_UNAVAILABLE` when this daemon serves no ingress.
 */
export function ingressEndpoint(core: Pick<Core, 'options'>): IngressEndpoint {
  const endpoint = core.options.ingress;
  if (!endpoint) throw new RamifyError('RUNTIME_UNAVAILABLE', 'this daemon serves no ingress (start it with `ramify serve --ingress-listen ADDR:PORT`)');
  return endpoint;
}

/** The API shape of a sandbox's ports. */
export function toPortsInfo(core: Pick<Core, 'options'>, record: SandboxRecord): PortsInfo {
  const endpoint = core.options.ingress;
  return {
    ports: record.ingress.ports.map((p): PortInfo => ({
      port: p.port,
      access: p.access,
      host: endpoint ? portHost(endpoint, record.id, p.port) : '',
      url: endpoint ? portUrl(endpoint, record.id, p.port) : '',
    })),
    autoResume: effectiveAutoResume(record.ingress),
  };
}

/**
 * `sandboxId`'s exposed ports.
 * @throws RamifyError `SANDBOX_NOT_FOUND` (also when killed).
 */
export async function listPorts(core: Core, sandboxId: string): Promise<PortsInfo> {
  const record = await loadSandbox(core, sandboxId);
  assertNotKilled(sandboxId, record.state);
  return toPortsInfo(core, record);
}

/**
 * The URL and host of exposed `port`, and the sandbox's access token when the port has token access.
 * @throws RamifyError `VALIDATION_FAILED` (port), `SANDBOX_NOT_FOUND` (also when killed), `PORT_NOT_EXPOSED`,
 *   `RUNTIME_UNAVAILABLE` (no ingress on this daemon).
 */
export async function getPortUrl(core: Core, sandboxId: string, port: number): Promise<PortUrlInfo> {
  checkPort(port);
  const endpoint = ingressEndpoint(core);
  const record = await loadSandbox(core, sandboxId);
  assertNotKilled(sandboxId, record.state);
  const exposed = record.ingress.ports.find((p) => p.port === port);
  if (!exposed) {
    throw new RamifyError('PORT_NOT_EXPOSED', `port ${port} of sandbox '${sandboxId}' is not exposed; expose it with \`ramify sandbox expose ${sandboxId} ${port}\` (add --public for no token)`, { id: sandboxId, port });
  }
  const info: PortUrlInfo = { url: portUrl(endpoint, sandboxId, port), host: portHost(endpoint, sandboxId, port) };
  return exposed.access === 'token' ? { ...info, token: await sandboxAccessToken(core, sandboxId) } : info;
}
