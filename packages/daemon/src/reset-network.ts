/**
 * `ramify serve --reset-network`: remove what a stopped daemon's network left on the host for its next
 * start (docs/design/NETWORKS.md): its namespaces `<prefix>-*` and their veths, the nftables tables of its
 * prefix (`ip`/`inet <prefix>`, `inet <prefix>_agent`, `inet <prefix>_ingress`), the egress route guard's
 * `ip rule`s and the slots' ready markers. The next `ramify serve` builds them again. Refused while a
 * daemon holds the data directory, or while a sandbox of the data directory still runs (its network would
 * go from under it): paused sandboxes hold no network and resume afterwards as usual.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RamifyError } from '@ramify/contracts';
import { NamespaceNetwork, run } from '@ramify/network';
import { lockDataDir } from './data-dir-lock.js';

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
 * @throws RamifyError `DATA_DIR_IN_USE` while a daemon runs on `dataDir`; `INVALID_STATE` (details
 *   `sandboxes`) while sandboxes of it still run.
 */
export async function resetNetwork(options: { dataDir: string; prefix: string }): Promise<NetworkReset> {
  mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
  const lock = lockDataDir(options.dataDir);
  try {
    const running = [...(await runningRunsc(options.dataDir)), ...(await runningQemu(options.dataDir))];
    if (running.length > 0) {
      throw new RamifyError('INVALID_STATE', `${running.length} sandbox(es) of ${options.dataDir} still run (${running.slice(0, 5).join(', ')}): start the daemon and pause or kill them first; their network would go from under them`, { sandboxes: running });
    }
    const namespaces = (await run(['ip', 'netns', 'list'])).stdout.split('\n').filter((l) => l.startsWith(`${options.prefix}-`)).length;
    await new NamespaceNetwork({ prefix: options.prefix }).destroyAll();
    return { prefix: options.prefix, namespaces };
  } finally {
    lock.release();
  }
}
