/**
 * Exposed ports as data: validating and normalising a request's port list, the effective `autoResume`,
 * and the host and URL of a port (`<port>-<sandboxId>.<domain>[:<ingressPort>]`, E2B's shape).
 */
import { AGENT_TCP_PORT, MAX_EXPOSED_PORTS, invalidField, type ExposedPort, type IngressEndpoint, type PortAccess, type PortSpec } from '@ramify/contracts';
import type { SandboxIngress } from '../ports/store.js';

/** A sandbox with nothing exposed and the default autoResume. */
export const NO_INGRESS: SandboxIngress = { ports: [], autoResume: null };

/**
 * `port` checked: an integer from 1 to 65535, not the agent's own port ({@link AGENT_TCP_PORT}). `path`:
 * where the request gave it (`params.port`, `body.ports.0`).
 * @throws RamifyError `VALIDATION_FAILED` as a schema issue on `path` (contracts/src/issue-messages.ts;
 *   details `field: 'port'`, `port` kept for older clients).
 */
export function checkPort(port: unknown, path = 'params.port'): number {
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw invalidField(path, `must be a port, an integer from 1 to 65535, got ${JSON.stringify(port) ?? 'nothing'}`, { field: 'port', port });
  }
  if (port === AGENT_TCP_PORT) {
    throw invalidField(path, `must not be ${port}, reserved for the Ramify agent inside the sandbox: serve on another port`, { field: 'port', port });
  }
  return port;
}

/**
 * A request's port list as stored: each a number (token access) or `{ port, access }`, sorted by port.
 * @throws RamifyError `VALIDATION_FAILED` for a bad port, a port given twice, or more than {@link MAX_EXPOSED_PORTS}.
 */
export function parsePortSpecs(specs: readonly PortSpec[]): ExposedPort[] {
  if (specs.length > MAX_EXPOSED_PORTS) throw invalidField('body.ports', `must be an array of at most ${MAX_EXPOSED_PORTS} items, got ${specs.length} items`, { field: 'ports' });
  const seen = new Map<number, ExposedPort>();
  for (const [i, spec] of specs.entries()) {
    const path = typeof spec === 'number' ? `body.ports.${i}` : `body.ports.${i}.port`;
    const port = checkPort(typeof spec === 'number' ? spec : spec.port, path);
    const access: PortAccess = typeof spec === 'number' ? 'token' : (spec.access ?? 'token');
    if (seen.has(port)) throw invalidField(path, `must name each port once, got port ${port} again`, { field: 'ports', port });
    seen.set(port, { port, access });
  }
  return sortPorts([...seen.values()]);
}

/** `ports` in port order (a copy). */
export function sortPorts(ports: readonly ExposedPort[]): ExposedPort[] {
  return [...ports].map((p) => ({ port: p.port, access: p.access })).sort((a, b) => a.port - b.port);
}

/** Whether a request to an exposed port wakes the sandbox: as set, else on while a port is exposed. */
export function effectiveAutoResume(ingress: SandboxIngress): boolean {
  return ingress.autoResume ?? ingress.ports.length > 0;
}

/** A copy of `ingress` (records handed to another sandbox or a snapshot never share arrays). */
export function copyIngress(ingress: SandboxIngress): SandboxIngress {
  return { ports: sortPorts(ingress.ports), autoResume: ingress.autoResume };
}

/**
 * The host of `port` of `sandboxId` behind `endpoint`: `<port>-<sandboxId>.<domain>[:<ingressPort>]`, lower-cased
 * (host names are case-insensitive and browsers lower-case them; the ingress looks ids up accordingly).
 */
export function portHost(endpoint: IngressEndpoint, sandboxId: string, port: number): string {
  return `${port}-${sandboxId}.${endpoint.domain}`.toLowerCase() + (endpoint.port === null ? '' : `:${endpoint.port}`);
}

/** The URL of `port` of `sandboxId`: `<protocol>://<host>/`. */
export function portUrl(endpoint: IngressEndpoint, sandboxId: string, port: number): string {
  return `${endpoint.protocol}://${portHost(endpoint, sandboxId, port)}/`;
}
