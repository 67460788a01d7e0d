/**
 * The host's bridges to the agent socket, known by pid. Under gVisor each host connection is a bridge
 * process the host starts inside the sandbox (`runsc exec`, packages/runtime/gvisor/src/gvisor-runtime.ts);
 * it writes its pid into {@link bridgePidDir} before it connects (`echo $$ > DIR/$$; exec socat ...`).
 * The freezer and the OOM guard spare those pids without reading their `/proc/PID`: runsc never frees
 * the procfs entries of a dead process whose `/proc/PID` was looked up, every later checkpoint encodes
 * them again, and a bridge dies at every checkpoint, so looking it up made each pause slower than the
 * last (docs/design/RUNTIME-GVISOR.md, "Dead processes stay in the sentry").
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Where bridges of the agent listening on `socketPath` write their pids: `<socket's directory>/bridges`. */
export function bridgePidDir(socketPath: string): string {
  return join(dirname(socketPath), 'bridges');
}

export class BridgePids {
  /**
   * @param dir the directory bridges write `<pid>` files into; created (mode 0700: only root's bridges
   *   can claim to be one) when missing.
   */
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** Pids that bridges wrote (running or not: use {@link prune} to drop the exited ones). */
  list(): Set<number> {
    const pids = new Set<number>();
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return pids;
    }
    for (const name of names) {
      const pid = Number(name);
      if (Number.isInteger(pid) && pid > 0) pids.add(pid);
    }
    return pids;
  }

  /**
   * Remove the files of bridges that exited, told by `kill(pid, 0)` (a signal-0 probe reads no /proc).
   * @returns how many were removed.
   */
  prune(): number {
    let removed = 0;
    for (const pid of this.list()) {
      if (lives(pid)) continue;
      rmSync(join(this.dir, String(pid)), { force: true });
      removed++;
    }
    return removed;
  }
}

function lives(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
