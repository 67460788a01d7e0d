/**
 * One daemon per network prefix on a host: the prefix names its network namespaces, veths, nftables
 * tables and slot markers (docs/design/NETWORKS.md), so a second daemon on the same prefix (another data
 * directory, other ports) would take the first one's slots as orphans, recreate its namespaces under its
 * running sandboxes and cut them off. `serve()` (and `--reset-network`) therefore take an exclusive lock on
 * `/run/ramify/network-<prefix>.lock` after the data directory's, and a second one stops at once with
 * `NETWORK_PREFIX_IN_USE` naming the holder and `--network-prefix`.
 *
 * The same kind of lock as the data directory's (data-dir-lock.ts), record-lock.ts's: an open file
 * description lock the kernel drops when the holder exits, killed or not; `/run` is cleared at boot. The
 * file holds the holder's {@link NetworkPrefixHolder} as one JSON line, read only to name it.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { RamifyError } from '@ramify/contracts/client';
import { lockWithRecord, readLockRecord } from './record-lock.js';

/** Where the prefixes' lock files live (tmpfs: nothing outlives a reboot). */
export const NETWORK_PREFIX_LOCK_DIR = '/run/ramify';

/** What a prefix's lock file says about its holder. */
export interface NetworkPrefixHolder {
  pid: number;
  /** The holder's data directory, absolute. */
  dataDir: string;
  /** ISO 8601. */
  startedAt: string;
}

/** A held prefix lock. */
export interface NetworkPrefixLock {
  /** Let the next daemon have the prefix (idempotent). */
  release(): void;
}

/**
 * Take `prefix`'s lock for the daemon of `dataDir`.
 * @throws RamifyError `NETWORK_PREFIX_IN_USE` (409; details `prefix`, `pid`, `dataDir` of the holder, null
 *   when unknown) when another process holds it; the file system's error when the file cannot be opened.
 */
export function lockNetworkPrefix(prefix: string, dataDir: string, lockDir = NETWORK_PREFIX_LOCK_DIR): NetworkPrefixLock {
  mkdirSync(lockDir, { recursive: true, mode: 0o700 });
  const path = join(lockDir, `network-${prefix}.lock`);
  const lock = lockWithRecord<NetworkPrefixHolder>(path, { pid: process.pid, dataDir: resolve(dataDir), startedAt: new Date().toISOString() });
  if (!lock) throw prefixInUse(prefix, readHolder(path));
  return { release: () => lock.release() };
}

function readHolder(path: string): NetworkPrefixHolder | null {
  return readLockRecord(path, (fields) => typeof fields.pid === 'number' && typeof fields.dataDir === 'string'
    ? { pid: fields.pid, dataDir: fields.dataDir, startedAt: String(fields.startedAt ?? '') }
    : null);
}

/** The `NETWORK_PREFIX_IN_USE` error of `prefix` held by `holder` (null: unknown). */
export function prefixInUse(prefix: string, holder: NetworkPrefixHolder | null): RamifyError {
  const who = holder ? `another ramify daemon (pid ${holder.pid}, data directory ${holder.dataDir})` : 'another ramify daemon';
  return new RamifyError(
    'NETWORK_PREFIX_IN_USE',
    `the network prefix '${prefix}' is in use by ${who}: its namespaces, nftables tables and slots are named after it, and a second daemon on it would cut that daemon's sandboxes off. Give this daemon its own --network-prefix (1-4 lower-case letters, e.g. --network-prefix ${prefix === 'rmb' ? 'rmc' : 'rmb'}; a second daemon also needs its own --port, --ingress-listen and --ssh-listen, or 'off' for those two)${holder ? `, or stop that one (kill ${holder.pid})` : ''}`,
    { prefix, pid: holder?.pid ?? null, dataDir: holder?.dataDir ?? null },
  );
}
