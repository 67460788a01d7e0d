/**
 * The SSH gateway (`ramify serve --ssh-listen`, docs/design/SSH.md): an ssh2 server whose user names are
 * sandbox ids. It authenticates with core's key and token use-cases, wakes a paused sandbox for the
 * connection, holds the sandbox as in use while connected (idle auto-pause waits), and serves sessions
 * (shell, exec, SFTP) and direct-tcpip forwards. Remote forwarding (`ssh -R`), X11 and agent forwarding
 * are refused. Started by `serve()` when `ssh` is given.
 */
import { hostname } from 'node:os';
import type { Core, SshEndpoint } from '@ramify/core';
import { DEFAULT_INGRESS_UID, IngressDialer, NamespaceNetwork, layoutForPrefix } from '@ramify/network';
import ssh2, { type CipherAlgorithm, type ClientInfo, type Connection } from 'ssh2';
import { acceptClient } from './auth.js';
import { Forwards } from './forward.js';
import { ensureRunningHere } from './host-placement.js';
import { loadHostKey } from './keys.js';
import { serveSession } from './session.js';
import type { SshScope } from './scope.js';

/** `ramify serve --ssh-*`. */
export interface SshOptions {
  /** Address to listen on; default `127.0.0.1` (loopback only). */
  host?: string;
  /** Port to listen on; default 2222; 0 picks a free one. */
  port?: number;
  /** Host clients dial, as `ssh-access` commands name it; default the listen address (this machine's name for a wildcard). */
  publicHost?: string;
  /** Port clients dial, when not the listen port (a port forward in front). */
  publicPort?: number;
  /** uid of the dialer that makes `ssh -L` connections; default the ingress firewall's ({@link DEFAULT_INGRESS_UID}). */
  dialerUid?: number;
}

export interface RunningSshGateway {
  endpoint: SshEndpoint;
  /** `host:port` listened on. */
  address: string;
  /** The host key's fingerprint (`SHA256:...`), as `ssh` shows it on first connect. */
  fingerprint: string;
  close(): Promise<void>;
}

/**
 * Ciphers offered, AES first: Node's OpenSSL runs them with AES-NI. ssh2's chacha20-poly1305 needs its
 * optional native addon (not built here) to be fast, and OpenSSH clients pick it first when offered.
 */
export const CIPHERS: CipherAlgorithm[] = ['aes128-gcm@openssh.com', 'aes256-gcm@openssh.com', 'aes128-ctr', 'aes192-ctr', 'aes256-ctr'];

/**
 * Start the gateway for `core`: host key (made once in `dataDir`), dialer, listener. Sets
 * `core.options.ssh` to the endpoint `ssh-access` commands point at. `placed` (the host role): connections
 * work on this host's sandboxes only (./host-placement.ts).
 * @throws when the port is taken or the host key cannot be read or written.
 */
export async function startSshGateway(core: Core, options: SshOptions, context: { dataDir: string; prefix: string; placed?: boolean }): Promise<RunningSshGateway> {
  const hostKey = await loadHostKey(context.dataDir);
  const layout = core.network instanceof NamespaceNetwork ? core.network.layout : layoutForPrefix(context.prefix);
  const dialer = new IngressDialer({ uid: options.dialerUid ?? DEFAULT_INGRESS_UID });
  const forwards = new Forwards(dialer, layout);
  const clients = new Set<Connection>();
  const server = new ssh2.Server({ hostKeys: [hostKey.privateKey], ident: 'Ramify', algorithms: { cipher: CIPHERS } }, (client, info) => {
    clients.add(client);
    client.once('close', () => clients.delete(client));
    serveConnection(core, forwards, client, info, context.placed === true);
  });
  const stopDropping = core.events.onCheckpointing(({ sandboxId }) => {
    const dropped = forwards.dropFor(sandboxId);
    if (dropped > 0) core.logger.info('ssh: closed forwarded connections into a sandbox for its checkpoint', { sandboxId, connections: dropped });
  });
  dialer.start();
  const host = options.host ?? '127.0.0.1';
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 2222, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    stopDropping();
    dialer.close();
    throw err;
  }
  const bound = server.address() as { address: string; port: number };
  const wildcard = host === '0.0.0.0' || host === '::';
  const endpoint: SshEndpoint = { host: options.publicHost ?? (wildcard ? hostname() : host), port: options.publicPort ?? bound.port };
  core.options.ssh = endpoint;
  core.logger.info('ssh serving', { address: `${bound.address}:${bound.port}`, hostKey: hostKey.fingerprint, dialerUid: dialer.uid });
  return {
    endpoint,
    address: `${bound.address}:${bound.port}`,
    fingerprint: hostKey.fingerprint,
    close: async () => {
      core.options.ssh = null;
      stopDropping();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const client of clients) client.end();
      await closed;
      dialer.close();
    },
  };
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
