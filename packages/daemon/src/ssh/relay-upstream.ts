/**
 * The API role's SSH relay, its side towards a host (docs/design/SCALE-OUT.md, "SSH through the API"): for
 * a connection authenticated for a sandbox, find the host that runs it (or, for a paused sandbox whose host
 * is gone and whose image is durable, the host placement reserves for its resume: core's
 * {@link placeOnSandbox}, as the resume route does), mint a short-lived SSH token of that sandbox (core's
 * {@link grantSshAccess}: the same token a user gets from `ssh-access`, stored hashed in the shared store)
 * and connect to the host's gateway (`HostRecord.sshAddress`) as an ssh2 client with it, naming the
 * reservation if there is one. The token is revoked as soon as the host accepted it. No new trust: the host
 * checks the token (and reservation) against the store as for any client.
 */
import { RamifyError, notFound } from '@ramify/contracts';
import { grantSshAccess, placeOnSandbox, revokeSshToken, type Core } from '@ramify/core';
import ssh2, { type Client } from 'ssh2';
import { CIPHERS } from './listener.js';

/** How long the relay's token lives if it is never revoked (ms): a connection is authenticated well within it. */
const RELAY_TOKEN_TTL_MS = 60_000;
/** How long a host may take to answer and authenticate the relay (ms). */
const CONNECT_TIMEOUT_MS = 15_000;

/** Where the relay connects for a sandbox: the host, its SSH address, the reservation for a resume there. */
export interface RelayTarget {
  hostId: string;
  sshAddress: string;
  reservationId: string | null;
}

/**
 * The host to connect to for `sandboxId`.
 * @throws RamifyError SANDBOX_NOT_FOUND, HOST_LOST (its host is not live and it is not a resumable paused
 *   sandbox), SANDBOX_UNAVAILABLE (paused, its image not yet out of the lost host), NO_HOST_CAPACITY,
 *   SSH_UNAVAILABLE (the host serves no SSH gateway).
 */
export async function relayTarget(core: Core, sandboxId: string): Promise<RelayTarget> {
  const record = await core.store.getSandbox(sandboxId);
  if (!record) throw notFound('SANDBOX_NOT_FOUND', 'sandbox', sandboxId, { id: sandboxId });
  const target = await placeOnSandbox(core, record, record.state === 'paused' ? 'resume' : 'call');
  const host = await core.store.getHost(target.hostId);
  if (!host?.sshAddress) {
    if (target.reservation) await core.store.releaseReservation(target.reservation.id).catch(() => undefined);
    throw new RamifyError('SSH_UNAVAILABLE', `host '${target.hostId}' (which runs sandbox '${sandboxId}') serves no SSH gateway: start it with --ssh-listen ADDR:PORT`, { hostId: target.hostId });
  }
  return { hostId: target.hostId, sshAddress: host.sshAddress, reservationId: target.reservation?.id ?? null };
}

/** `host:port` (IPv6 in brackets) as host and port. */
function splitAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  return { host: address.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port: Number(address.slice(colon + 1)) };
}

/**
 * Connect to `sandboxId`'s host gateway, authenticated with a fresh token of the sandbox (revoked once the
 * host accepted it). Resolves with the ready ssh2 client.
 * @throws RamifyError as {@link relayTarget}; RUNTIME_UNAVAILABLE when the host does not answer or refuses.
 */
export async function connectUpstream(core: Core, sandboxId: string): Promise<{ client: Client; target: RelayTarget }> {
  const target = await relayTarget(core, sandboxId);
  const access = await grantSshAccess(core, sandboxId, { ttlMs: RELAY_TOKEN_TTL_MS, ownerApiKeyId: null });
  const username = target.reservationId ? `${access.user}+${target.reservationId}` : access.user;
  const { host, port } = splitAddress(target.sshAddress);
  const client = new ssh2.Client();
  try {
    await new Promise<void>((resolve, reject) => {
      client.once('ready', resolve).once('error', reject).once('close', () => reject(new Error('the connection closed')));
      client.connect({
        host, port, username, authHandler: [{ type: 'none', username }] as never, readyTimeout: CONNECT_TIMEOUT_MS, keepaliveInterval: 15_000,
        // Hosts are reached on the cluster's network by the registry's address, as forwarded HTTP is.
        hostVerifier: () => true, algorithms: { cipher: CIPHERS },
      });
    });
  } catch (err) {
    client.end();
    const why = err instanceof Error ? err.message : String(err);
    throw new RamifyError('RUNTIME_UNAVAILABLE', `host '${target.hostId}' at ${target.sshAddress} did not let the SSH relay in: ${why}`, { hostId: target.hostId });
  } finally {
    await revokeSshToken(core, access.token).catch(() => undefined);
  }
  client.on('error', (err) => core.logger.debug('ssh relay: host connection error', { sandboxId, hostId: target.hostId, error: err.message }));
  return { client, target };
}
