/**
 * The ingress edge of the daemon: the listener for port URLs (`@ramify/network`'s `IngressThread`: the
 * `IngressServer` on a thread of its own, with a route cache this module's {@link IngressRouteFeed} keeps
 * in step) over core's ingress use-cases, and its firewall table. Started by `serve()` when `ingress` is given.
 */
import { readFile } from 'node:fs/promises';
import { DEFAULT_INGRESS_DOMAIN, RamifyError, type IngressEndpoint } from '@ramify/contracts';
import { acceptSandboxHere, heldHere, ingressTarget, sandboxListeners, tokenVerifier, wakeForIngress, type Core } from '@ramify/core';
import { DEFAULT_AGENT_DIALER_UID, DEFAULT_INGRESS_UID, IngressThread, installIngressFirewall, watchIngressFirewall, NamespaceNetwork, layoutForPrefix, slotAddresses, slotRange, type IngressBackend } from '@ramify/network';
import { DEFAULT_HOST, DEFAULT_INGRESS_PORT } from './config.js';
import { IngressRouteFeed } from './ingress-routes.js';

/** `ramify serve --ingress-*`. */
export interface IngressOptions {
  /** Address to listen on; default `127.0.0.1` (loopback only). */
  host?: string;
  /** Port to listen on; default 7424; 0 picks a free one. */
  port?: number;
  /** Domain of port URLs; default `localhost` (`*.localhost` resolves to loopback in curl and browsers). */
  domain?: string;
  /** PEM files of a certificate (a wildcard `*.<domain>`) and its key: serve HTTPS. */
  tls?: { certFile: string; keyFile: string };
  /** uid of the dialer process (the only one the firewall lets reach slots); default the network's `DEFAULT_INGRESS_UID`. */
  uid?: number;
  /**
   * The port URLs name, when it is not the listen port (e.g. behind a port forward or a load balancer on
   * 443); default the listen port.
   */
  publicPort?: number;
  /**
   * The protocol port URLs name, when it is not the listener's: a host behind an API process's ingress edge
   * that terminates TLS names `https` while it serves plain HTTP (docs/design/SCALE-OUT.md, "Port URLs").
   */
  publicProtocol?: 'http' | 'https';
  /** How often the firewall table is checked and re-installed if gone, ms; default 2000. */
  watchIntervalMs?: number;
  /** Install the firewall table (default `install`; `skip` when the network is not the real one). */
  firewall?: 'install' | 'skip';
}

export interface RunningIngress {
  endpoint: IngressEndpoint;
  /** `host:port` listened on. */
  address: string;
  close(): Promise<void>;
}

/**
 * Start the ingress for `core`: firewall, dialer, listener. Sets `core.options.ingress` to the endpoint
 * URLs point at. Rejects when the port is taken, the TLS files cannot be read, or nft fails.
 */
export async function startIngress(core: Core, options: IngressOptions, network: { prefix: string }): Promise<RunningIngress> {
  const layout = core.network instanceof NamespaceNetwork ? core.network.layout : layoutForPrefix(network.prefix);
  const dialerUid = options.uid ?? DEFAULT_INGRESS_UID;
  // The agent channel's dialer passes here; its own table keeps it to the agent port (agent-channel.ts).
  const firewall = { prefix: network.prefix, slotRange: slotRange(layout), dialerUid, agentDialerUid: DEFAULT_AGENT_DIALER_UID };
  // Read before the firewall is installed and watched: a missing file leaves nothing running.
  const tls = options.tls ? { cert: await readFile(options.tls.certFile), key: await readFile(options.tls.keyFile) } : undefined;
  let stopWatch = (): void => undefined;
  if ((options.firewall ?? 'install') === 'install') {
    await installIngressFirewall(firewall);
    // Re-installed as soon as nft reports it deleted (a 2 s poll while the monitor is down): while it is
    // gone any host process could reach slot ports.
    stopWatch = watchIngressFirewall(firewall, {
      ...(options.watchIntervalMs !== undefined ? { intervalMs: options.watchIntervalMs } : {}),
      onReinstall: () => core.logger.warn('ingress: the ingress firewall table was gone; re-installed it', { table: `inet ${network.prefix}_ingress` }),
      onError: (err) => core.logger.error('ingress: checking the ingress firewall table failed', { error: err instanceof Error ? err.message : String(err) }),
    });
  }
  // What the ingress thread asks of core: only what its route cache cannot answer, wakes and diagnoses.
  const backend: IngressBackend = {
    target: async (sandboxId, port) => {
      const t = await ingressTarget(core, sandboxId, port);
      // Another host's slot number means nothing here: such a request goes on to `running`, which refuses it.
      const slotAddress = t.record.state === 'running' && t.record.slot !== null && heldHere(core, t.record) ? slotAddresses(layout, t.record.slot).slotAddress : null;
      return { access: t.access, tokenVerifier: t.token === null ? null : tokenVerifier(t.token), slotAddress };
    },
    running: async (sandboxId, placement) => {
      await acceptIngressPlacement(core, sandboxId, placement);
      const { record, woke } = await wakeForIngress(core, sandboxId, core.options.ingressWakeTimeoutMs);
      if (record.slot === null || !heldHere(core, record)) throw new RamifyError('UPSTREAM_ERROR', `sandbox '${sandboxId}' has no network slot on this host`, { id: sandboxId });
      return { slotAddress: slotAddresses(layout, record.slot).slotAddress, woke };
    },
    listeners: (sandboxId, port) => sandboxListeners(core, sandboxId, port),
    hold: (sandboxId) => core.activity.hold(sandboxId),
    log: (entry) => core.ingressLog.record(entry),
  };
  const domain = options.domain ?? DEFAULT_INGRESS_DOMAIN;
  // The listener, the upstream pool and the dialer run on a thread of their own, off the daemon's event loop.
  const thread = new IngressThread({
    backend, domain, dialerUid, listen: { host: options.host ?? DEFAULT_HOST, port: options.port ?? DEFAULT_INGRESS_PORT }, ...(tls ? { tls } : {}),
    onError: (err, context) => core.logger.warn('ingress: a request or the ingress thread failed', { ...context, error: err instanceof Error ? err.message : String(err) }),
  });
  const feed = new IngressRouteFeed(core, layout, thread);
  const stopDropping = core.events.onCheckpointing(({ sandboxId }) => {
    void thread.dropConnections(sandboxId).then((dropped) => {
      if (dropped.open > 0) core.logger.info('ingress: closed connections into a sandbox for its checkpoint', { sandboxId, connections: dropped.open, idle: dropped.idle });
    });
  });
  // A read of the ingress log sees the requests the thread has not sent over yet.
  const stopPulling = core.ingressLog.addSource(() => thread.flush());
  const stopAll = async (): Promise<void> => {
    stopWatch();
    stopDropping();
    stopPulling();
    feed.stop();
    await thread.close();
  };
  const bound = await feed.start().then(() => thread.ready).catch(async (err: unknown) => {
    await stopAll();
    throw err;
  });
  const endpoint = publicEndpoint(domain, options.publicProtocol ?? thread.protocol, options.publicPort ?? bound.port);
  core.options.ingress = endpoint;
  core.logger.info('ingress serving', { address: `${bound.address}:${bound.port}`, domain, protocol: thread.protocol, dialerUid });
  return {
    endpoint,
    address: `${bound.address}:${bound.port}`,
    close: stopAll,
  };
}

/** The endpoint port URLs name: no port when it is the protocol's default one. */
export function publicEndpoint(domain: string, protocol: 'http' | 'https', port: number): IngressEndpoint {
  return { domain, protocol, port: port === (protocol === 'https' ? 443 : 80) ? null : port };
}

/**
 * A port URL request for a sandbox recorded on another host is served here only to move a paused sandbox off
 * a lost host: with a live reservation of this host in `placement` (an API process's ingress edge made it:
 * docs/design/SCALE-OUT.md, "Port URLs"), as the resume route asks. The reservation is released by the edge
 * once the request is done (the sandbox's own row counts from the resume on).
 * @throws RamifyError PLACEMENT_INVALID otherwise.
 */
async function acceptIngressPlacement(core: Core, sandboxId: string, placement: string | undefined): Promise<void> {
  await acceptSandboxHere(core, sandboxId, placement, { move: true, where: "its port URLs are served by that host, or by an API process's ingress edge" });
}
