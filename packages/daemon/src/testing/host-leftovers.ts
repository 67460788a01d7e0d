/**
 * What a host daemon run in its own network namespace can leave on the machine, found and removed:
 * processes naming its data directory (the daemon; runsc, whose `--root` lies under it, keeps sandboxes
 * running after the daemon stops or is killed), its slot namespaces' entries in /run/netns (made inside
 * the daemon's own mount namespace, a slave of the machine's, so the root namespace sees only the empty files) and
 * its slots' ready markers. Its nftables tables and veths live in the host's namespace and go with it.
 * Test support only.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';

/** One host's footprint: its data directory and its daemon's network prefix. */
export interface HostFootprint {
  dataDir: string;
  networkPrefix: string;
}

/** Pids of processes whose command line names `dir` (other than this process). */
export function processesNaming(dir: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv.some((arg) => arg === dir || arg.startsWith(`${dir}/`) || arg.includes(`=${dir}/`))) pids.push(Number(entry));
    } catch {
      /* exited meanwhile */
    }
  }
  return pids;
}

const listed = (dir: string, re: RegExp): string[] => {
  try {
    return readdirSync(dir).filter((name) => re.test(name));
  } catch {
    return [];
  }
};

/** What of `host` is left: `process <pid>`, `netns <name>`, `marker <name>`. Empty when it is gone. */
export function hostLeftovers(host: HostFootprint): string[] {
  const mine = new RegExp(`^${host.networkPrefix}-`);
  return [
    ...processesNaming(host.dataDir).map((pid) => `process ${pid}`),
    ...listed('/run/netns', mine).map((name) => `netns ${name}`),
    ...listed('/run/ramify-net', mine).map((name) => `marker ${name}`),
  ];
}

/**
 * Remove what {@link hostLeftovers} finds: SIGKILL the processes (twice over, runsc's children appear
 * as their parents die), then the namespace entries and markers. Call once the host's daemon is stopped.
 */
export async function sweepHost(host: HostFootprint): Promise<void> {
  for (let round = 0; round < 5; round++) {
    const pids = processesNaming(host.dataDir);
    if (pids.length === 0) break;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  forgetHostNamespaces(host);
}

/**
 * Remove a host's namespace entries and slot markers, and nothing else. A host daemon runs in a mount
 * namespace of its own (daemon-process.ts), so its slot namespaces' bind mounts die with it and only
 * empty files stay in /run/netns, which its next process would take for live namespaces (`nsenter`:
 * "reassociate to namespace 'ns/net' failed"). On a real machine the mounts outlive the daemon; here a
 * restarted host starts as after a reboot of its network state. Its runtime leftovers stay for its
 * reconcile to find.
 */
export function forgetHostNamespaces(host: HostFootprint): void {
  const mine = new RegExp(`^${host.networkPrefix}-`);
  for (const name of listed('/run/netns', mine)) {
    spawnSync('ip', ['netns', 'delete', name]);
    rmSync(`/run/netns/${name}`, { force: true });
  }
  for (const name of listed('/run/ramify-net', mine)) rmSync(`/run/ramify-net/${name}`, { force: true });
}
