/**
 * The API role's SSH gateway (`ramify serve --role api --ssh-listen ADDR`, docs/design/SCALE-OUT.md): one
 * listener for every sandbox of the cluster. A client authenticates exactly as at a host's gateway (./auth.ts
 * against the shared store: registered keys and live tokens); then the relay connects to the sandbox's host
 * gateway with a token of its own (./relay-upstream.ts, resuming through placement a paused sandbox whose
 * host is gone) and relays each channel there (./relay-channels.ts). A host that is lost, runs no SSH or does
 * not answer is told on each channel's stderr (exit status 255), and the client is disconnected.
 * The host key is this process's (`<data dir>/ssh_host_ed25519_key`): API processes behind one load
 * balancer share it by having the same file in their data directories.
 */
import type { Core } from '@ramify/core';
import type { ClientInfo, Connection } from 'ssh2';
import { acceptClient } from './auth.js';
import { listenSsh, type RunningSshGateway, type SshOptions } from './listener.js';
import { relayForward, relaySession, type Upstream } from './relay-channels.js';
import { connectUpstream } from './relay-upstream.js';

/** How long a client whose host connection failed may keep its connection to read why (ms). */
const FAILED_LINGER_MS = 3000;

/**
 * Start the relay for the API role's `core`: host key (made once in `dataDir`), listener. Sets
 * `core.options.ssh` to its endpoint, so `ssh-access` answered here points at it.
 * @throws when the port is taken or the host key cannot be read or written.
 */
export async function startSshRelay(core: Core, options: SshOptions, context: { dataDir: string }): Promise<RunningSshGateway> {
  const listening = await listenSsh(core, options, context.dataDir, (client, info) => relayConnection(core, client, info));
  core.logger.info('ssh relay serving', { address: listening.address, hostKey: listening.fingerprint });
  return listening;
}

/** One client connection: authenticated here, then relayed to its sandbox's host. */
function relayConnection(core: Core, client: Connection, info: ClientInfo): void {
  acceptClient(core, client, info, ({ sandboxId }) => {
    let hostId = 'unknown';
    let left = false;
    client.once('close', () => (left = true));
    const upstream: Upstream = connectUpstream(core, sandboxId).then(({ client: host, target }) => {
      hostId = target.hostId;
      if (left) {
        host.end();
        throw new Error('the client left before the host connection was ready');
      }
      core.logger.info('ssh relay: connected to the host', { sandboxId, hostId, reservation: target.reservationId });
      // A host going away ends the client's connection, once its channels have said so.
      host.once('close', () => setTimeout(() => client.end(), FAILED_LINGER_MS).unref());
      client.once('close', () => host.end());
      return host;
    });
    upstream.catch((err: unknown) => {
      core.logger.info('ssh relay: no host connection', { sandboxId, error: err instanceof Error ? err.message : String(err) });
      // Each channel says why (./relay-channels.ts); a client opening none (ssh -N) is disconnected.
      setTimeout(() => client.end(), FAILED_LINGER_MS).unref();
    });
    const lost = (): string => `the connection to host '${hostId}' closed before the program's exit status came`;
    client.on('session', (accept) => {
      const session = accept();
      if (session) relaySession(session, upstream, lost);
    });
    client.on('tcpip', (accept, reject, request) => relayForward(upstream, request, accept, reject));
    client.on('request', (_accept, reject) => reject?.());
  });
}
