/**
 * The SSH gateway (`ramify serve --ssh-listen`, docs/design/SSH.md): an ssh2 server whose user names are
 * sandbox ids. It authenticates with core's key and token use-cases, wakes a paused sandbox for the
 * connection, holds the sandbox as in use while connected (idle auto-pause waits), and serves sessions
 * (shell, exec, SFTP) and direct-tcpip forwards. Remote forwarding (`ssh -R`), X11 and agent forwarding
 * are refused. Started by `serve()` when `ssh` is given.
 */
import type { Core } from '@ramify/core';
import { DEFAULT_INGRESS_UID, IngressDialer, NamespaceNetwork, layoutForPrefix } from '@ramify/network';
import type { ClientInfo, Connection } from 'ssh2';
import { acceptClient } from './auth.js';
import { Forwards } from './forward.js';
import { ensureRunningHere } from './host-placement.js';
import { listenSsh, type RunningSshGateway, type SshOptions } from './listener.js';
import { serveSession } from './session.js';
import type { SshScope } from './scope.js';

export type { RunningSshGateway, SshOptions } from './listener.js';

/**
 * Start the gateway for `core`: host key (made once in `dataDir`), dialer, listener. Sets
 * `core.options.ssh` to the endpoint `ssh-access` commands point at. `placed` (the host role): connections
 * work on this host's sandboxes only (./host-placement.ts).
 * @throws when the port is taken or the host key cannot be read or written.
 */
export async function startSshGateway(core: Core, options: SshOptions, context: { dataDir: string; prefix: string; placed?: boolean }): Promise<RunningSshGateway> {
  const layout = core.network instanceof NamespaceNetwork ? core.network.layout : layoutForPrefix(context.prefix);
  const dialer = new IngressDialer({ uid: options.dialerUid ?? DEFAULT_INGRESS_UID });
  const forwards = new Forwards(dialer, layout);
  const stopDropping = core.events.onCheckpointing(({ sandboxId }) => {
    const dropped = forwards.dropFor(sandboxId);
    if (dropped > 0) core.logger.info('ssh: closed forwarded connections into a sandbox for its checkpoint', { sandboxId, connections: dropped });
  });
  dialer.start();
  try {
    const listening = await listenSsh(core, options, context.dataDir, (client, info) => serveConnection(core, forwards, client, info, context.placed === true));
    core.logger.info('ssh serving', { address: listening.address, hostKey: listening.fingerprint, dialerUid: dialer.uid });
    return {
      ...listening,
      close: async () => {
        stopDropping();
        await listening.close();
        dialer.close();
      },
    };
  } catch (err) {
    stopDropping();
    dialer.close();
    throw err;
  }
}

/** One client connection: authentication, then its channels, all for the one sandbox it named. */
function serveConnection(core: Core, forwards: Forwards, client: Connection, info: ClientInfo, placed: boolean): void {
  acceptClient(core, client, info, (principal) => {
    const { sandboxId } = principal;
    const release = core.activity.hold(sandboxId);
    client.once('close', release);
    const scope: SshScope = { core, sandboxId, ensureRunning: () => ensureRunningHere(core, principal, placed) };
    client.on('session', (accept) => {
      const session = accept();
      if (session) serveSession(scope, session);
    });
    client.on('tcpip', (accept, reject, request) => void forwards.open(scope, request, accept, reject));
    client.on('request', (_accept, reject) => reject?.());
  });
}
