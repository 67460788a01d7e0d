/**
 * `ramify serve --reset-network`: remove what a stopped daemon's network left on the host for its next
 * start (docs/design/NETWORKS.md): its namespaces `<prefix>-*` and their veths, the nftables tables of its
 * prefix (`ip`/`inet <prefix>`, `inet <prefix>_agent`, `inet <prefix>_ingress`), the egress route guard's
 * `ip rule`s and the slots' ready markers. The next `ramify serve` builds them again. Refused while a
 * daemon holds the data directory, or while a sandbox of the data directory still runs (its network would
 * go from under it): paused sandboxes hold no network and resume afterwards as usual.
 * A failed start removes the set-up it made itself ({@link undoNetworkSetUp}, docs/design/ARCHITECTURE.md,
 * "A failed start").
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RamifyError } from '@ramify/contracts';
import { NamespaceNetwork, run } from '@ramify/network';
import type { Logger } from '@ramify/core';
import { lockDataDir } from './data-dir-lock.js';
import { lockNetworkPrefix, type NetworkPrefixLock } from './network-prefix-lock.js';

const exec = promisify(execFile);

/** What {@link resetNetwork} removed. */
export interface NetworkReset {
  prefix: string;
  /** Network namespaces `<prefix>-*` deleted (a sandbox's and its router's per slot). */
  namespaces: number;
}

/** Ids of the gVisor sandboxes of `dataDir` whose runsc state says running (or paused by runsc). */
async function runningRunsc(dataDir: string): Promise<string[]> {
  const root = join(dataDir, 'runtime', 'gvisor', 'state');
  if (!existsSync(root)) return [];
  const { stdout } = await exec('runsc', ['--root', root, 'list', '-format=json']).catch(() => ({ stdout: '[]' }));
  const list = (JSON.parse(stdout || '[]') ?? []) as Array<{ id: string; status: string }>;
  return list.filter((c) => c.status === 'running' || c.status === 'paused').map((c) => c.id);
}

/** pids of QEMU processes of `dataDir`'s microVM sandboxes. */
async function runningQemu(dataDir: string): Promise<string[]> {
  const { stdout } = await exec('ps', ['-eo', 'pid=,args=']);
  const dir = join(dataDir, 'runtime', 'microvm');
  return stdout.split('\n').filter((l) => /qemu-system/.test(l) && l.includes(dir)).map((l) => l.trim().split(/\s+/)[0] ?? '');
}

/**
 * Remove the network set-up of a stopped daemon of `prefix` whose data directory is `dataDir`.
 * @throws RamifyError `DATA_DIR_IN_USE` while a daemon runs on `dataDir`, `NETWORK_PREFIX_IN_USE` while
 *   one of another data directory runs on `prefix`; `INVALID_STATE` (details
 *   `sandboxes`) while sandboxes of it still run.
 */
export async function resetNetwork(options: { dataDir: string; prefix: string }): Promise<NetworkReset> {
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const lock = lockDataDir(options.dataDir);
  let prefixLock: NetworkPrefixLock | null = null;
  try {
    // A daemon of another data directory on the same prefix would lose its network from under its sandboxes.
    prefixLock = lockNetworkPrefix(options.prefix, options.dataDir);
    const running = [...(await runningRunsc(options.dataDir)), ...(await runningQemu(options.dataDir))];
    if (running.length > 0) {
      throw new RamifyError('INVALID_STATE', `${running.length} sandbox(es) of ${options.dataDir} still run (${running.slice(0, 5).join(', ')}): start the daemon and pause or kill them first; their network would go from under them`, { sandboxes: running });
    }
    const namespaces = (await networkFootprint(options.prefix))?.namespaces.length ?? 0;
    await new NamespaceNetwork({ prefix: options.prefix }).destroyAll();
    return { prefix: options.prefix, namespaces };
  } finally {
    prefixLock?.release();
    lock.release();
  }
}

/** What of a prefix's network set-up is on the host (the ip rules and markers go with these). */
export interface NetworkFootprint {
  /** Network namespaces `<prefix>-*`. */
  namespaces: string[];
  /** nftables tables of the prefix, as `nft list tables` names them: `inet rmf`, `inet rmf_agent`, `inet rmf_ingress`, `ip rmf`. */
  tables: string[];
}

/** The namespaces and nftables tables of `prefix` on the host now; null when `ip` or `nft` cannot list them (not root, not installed). */
export async function networkFootprint(prefix: string): Promise<NetworkFootprint | null> {
  try {
    const [netns, tables] = await Promise.all([run(['ip', 'netns', 'list']), run(['nft', 'list', 'tables'])]);
    if (netns.code !== 0 || tables.code !== 0) return null;
    return {
      namespaces: netns.stdout.split('\n').map((l) => l.split(' ')[0] ?? '').filter((name) => name.startsWith(`${prefix}-`)),
      tables: tables.stdout.split('\n').map((l) => l.trim().replace(/^table /, ''))
        .filter((t) => [prefix, `${prefix}_agent`, `${prefix}_ingress`].includes(t.split(' ')[1] ?? '')),
    };
  } catch {
    return null;
  }
}

const isEmpty = (footprint: NetworkFootprint): boolean => footprint.namespaces.length === 0 && footprint.tables.length === 0;

/**
 * After a failed start (its listeners, egress enforcement and store closed, the data directory's lock still
 * held): remove the network set-up of `prefix` when `before`, its footprint when the start began, was empty,
 * so that all of it is this start's (what `ramify serve --reset-network` removes). A set-up that was there
 * before (a stopped daemon's, kept for its sandboxes and its next start; or another daemon's of the same
 * prefix) is left as found: which parts this start added cannot be told apart.
 * @returns null when nothing of the prefix is left; else a note for the error's message naming what stays
 *   and the `ramify serve --reset-network` that removes it. Never throws.
 */
export async function undoNetworkSetUp(before: NetworkFootprint | null, options: { dataDir: string; prefix: string; logger: Logger }): Promise<string | null> {
  const { dataDir, prefix, logger } = options;
  const reset = `ramify serve --reset-network --data-dir ${dataDir} --network-prefix ${prefix}`;
  const made = await networkFootprint(prefix);
  if (made === null || isEmpty(made)) return null;
  const what = (f: NetworkFootprint): string => `${f.namespaces.length} namespaces ${prefix}-*, nftables tables ${f.tables.join(', ') || 'none'}`;
  if (before === null || !isEmpty(before)) {
    const was = before === null ? 'may have been on the host before this start' : 'was on the host before this start';
    return `The network set-up of prefix '${prefix}' (${what(made)}) ${was} and stays; once no daemon or sandbox of this prefix uses it, ${reset} removes it`;
  }
  try {
    await new NamespaceNetwork({ prefix }).destroyAll();
  } catch (err) {
    logger.warn('removing the network set-up of the failed start failed', { prefix, error: err instanceof Error ? err.message : String(err) });
  }
  const left = await networkFootprint(prefix);
  if (left !== null && isEmpty(left)) {
    logger.info('removed the network set-up of the failed start', { prefix, namespaces: made.namespaces.length, tables: made.tables });
    return null;
  }
  return `The network set-up this start made for prefix '${prefix}' could not all be removed (${left === null ? 'unknown' : what(left)} left): ${reset} removes it`;
}
