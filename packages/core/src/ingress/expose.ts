/**
 * Use-cases: expose a port, unexpose it, set autoResume. Each is validate → lock → check → persist →
 * emit (`events.onIngress`: the ingress's route cache follows, before the call is acknowledged) →
 * acknowledge; nothing is enforced on the host (the host firewall lets only the ingress's own connections
 * reach any slot).
 */
import type { PortAccess } from '@ramify/contracts';
import type { Core } from '../context.js';
import { loadSandbox } from '../lifecycle/records.js';
import { assertNotKilled } from '../lifecycle/state-machine.js';
import type { SandboxRecord } from '../ports/store.js';
import { sandboxAccessToken } from './access-token.js';
import { checkPort, sortPorts } from './ports.js';

/**
 * Expose `port` of `sandboxId` with `access` (default `token`), or change the access of an exposed port.
 * Stored before it returns; running and paused sandboxes alike.
 * @returns the updated record.
 * @throws RamifyError `VALIDATION_FAILED` (port), `SANDBOX_NOT_FOUND` (also when killed; nothing is stored then).
 */
export async function exposePort(core: Core, sandboxId: string, port: number, options: { access?: PortAccess } = {}): Promise<SandboxRecord> {
  checkPort(port);
  const access = options.access ?? 'token';
  return core.locks.run(sandboxId, async () => {
    const record = await loadSandbox(core, sandboxId);
    assertNotKilled(sandboxId, record.state);
    // A token exists before a token port is acknowledged (sandboxes from before tokens get theirs here).
    if (access === 'token') await sandboxAccessToken(core, sandboxId);
    const ports = sortPorts([...record.ingress.ports.filter((p) => p.port !== port), { port, access }]);
    return stored(core, await core.store.updateSandbox(sandboxId, { ingress: { ...record.ingress, ports } }));
  });
}

/**
 * Close `port` of `sandboxId` to the ingress (no-op when it is not exposed). Requests already being
 * proxied finish; new ones get `PORT_NOT_EXPOSED`.
 * @throws RamifyError `VALIDATION_FAILED` (port), `SANDBOX_NOT_FOUND` (also when killed).
 */
export async function unexposePort(core: Core, sandboxId: string, port: number): Promise<SandboxRecord> {
  checkPort(port);
  return core.locks.run(sandboxId, async () => {
    const record = await loadSandbox(core, sandboxId);
    assertNotKilled(sandboxId, record.state);
    if (!record.ingress.ports.some((p) => p.port === port)) return record;
    return stored(core, await core.store.updateSandbox(sandboxId, { ingress: { ...record.ingress, ports: record.ingress.ports.filter((p) => p.port !== port) } }));
  });
}

/**
 * Whether a request to an exposed port wakes `sandboxId` when it is paused.
 * @throws RamifyError `SANDBOX_NOT_FOUND` (also when killed).
 */
export async function setAutoResume(core: Core, sandboxId: string, autoResume: boolean): Promise<SandboxRecord> {
  return core.locks.run(sandboxId, async () => {
    const record = await loadSandbox(core, sandboxId);
    assertNotKilled(sandboxId, record.state);
    return stored(core, await core.store.updateSandbox(sandboxId, { ingress: { ...record.ingress, autoResume } }));
  });
}

/** Tell the listeners (the ingress) of a persisted change; returns the record. */
function stored(core: Core, record: SandboxRecord): SandboxRecord {
  core.events.emitIngress({ sandboxId: record.id, sandbox: record });
  return record;
}
