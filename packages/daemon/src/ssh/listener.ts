/**
 * What the SSH gateway of a host (./gateway.ts) and the API role's relay (./relay.ts) share: the ssh2
 * server with the host key of the data directory, its listener, the endpoint `ssh-access` commands name
 * (set on `core.options.ssh`), and a close that ends every client.
 */
import { hostname } from 'node:os';
import type { Core, SshEndpoint } from '@ramify/core';
import ssh2, { type CipherAlgorithm, type ClientInfo, type Connection } from 'ssh2';
import { DEFAULT_SSH_PORT } from '../config.js';
import { loadHostKey } from './keys.js';

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
  /** uid of the dialer that makes `ssh -L` connections; default the ingress firewall's (`DEFAULT_INGRESS_UID` of @ramify/network); a host gateway's only. */
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
 * Listen for SSH as `options` says with the host key of `dataDir` (made once there), handing each client
 * connection to `onClient`. Sets `core.options.ssh` (cleared by `close`, which also ends every client).
 * @throws when the port is taken or the host key cannot be read or written.
 */
export async function listenSsh(core: Core, options: SshOptions, dataDir: string, onClient: (client: Connection, info: ClientInfo) => void): Promise<RunningSshGateway> {
  const hostKey = await loadHostKey(dataDir);
  const clients = new Set<Connection>();
  const server = new ssh2.Server({ hostKeys: [hostKey.privateKey], ident: 'Ramify', algorithms: { cipher: CIPHERS } }, (client, info) => {
    clients.add(client);
    client.once('close', () => clients.delete(client));
    onClient(client, info);
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DEFAULT_SSH_PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as { address: string; port: number };
  const wildcard = host === '0.0.0.0' || host === '::';
  const endpoint: SshEndpoint = { host: options.publicHost ?? (wildcard ? hostname() : host), port: options.publicPort ?? bound.port };
  core.options.ssh = endpoint;
  return {
    endpoint,
    address: `${bound.address}:${bound.port}`,
    fingerprint: hostKey.fingerprint,
    close: async () => {
      core.options.ssh = null;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const client of clients) client.end();
      await closed;
    },
  };
}
