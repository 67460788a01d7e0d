/**
 * An ingress route: what the ingress must know of a sandbox to serve a request to one of its ports
 * without asking core. The daemon keeps one per live sandbox in the ingress's own thread, pushed on every
 * change (docs/design/INGRESS.md, "Where the ingress runs"). Pure data, and the checks that both core's
 * {@link ingressTarget} and the ingress's thread make, so the two always answer alike.
 */
import { RamifyError, notFound, type ExposedPort, type PortAccess, type SandboxState } from '@ramify/contracts';
import { isTerminal } from '../lifecycle/state-machine.js';

export interface IngressRoute {
  sandboxId: string;
  state: SandboxState;
  /** The sandbox's slot address while it runs; null otherwise (a request then asks core, which wakes it). */
  slotAddress: string | null;
  /** Exposed ports and their access, in port order. */
  ports: ExposedPort[];
  /** `tokenVerifier` of the sandbox's token (never the token); null when not known yet (a request asks core). */
  tokenVerifier: string | null;
}

/** The error for a Host naming a sandbox that does not exist. */
export function sandboxNotFound(sandboxId: string): RamifyError {
  return notFound('SANDBOX_NOT_FOUND', 'sandbox', sandboxId, { id: sandboxId });
}

/**
 * The access of exposed `port` of a sandbox in `state` with `ports`.
 * @throws RamifyError `SANDBOX_KILLED` (410: killed or being killed), `PORT_NOT_EXPOSED` (404).
 */
export function exposedAccess(sandboxId: string, state: SandboxState, ports: readonly ExposedPort[], port: number): PortAccess {
  if (isTerminal(state) || state === 'killing') throw new RamifyError('SANDBOX_KILLED', `sandbox '${sandboxId}' was killed`, { id: sandboxId });
  const exposed = ports.find((p) => p.port === port);
  if (!exposed) throw new RamifyError('PORT_NOT_EXPOSED', `port ${port} of sandbox '${sandboxId}' is not exposed`, { id: sandboxId, port });
  return exposed.access;
}
