/**
 * What the conformance harness does when its process ends before `teardown`: an uncaught error, a test
 * runner timeout, Ctrl-C. The daemon child and the microVM runtime's QEMU processes are detached from
 * nothing here, but QEMU is (its own session): left alone, GiB-sized VMs would keep running. So, on exit
 * or SIGINT/SIGTERM, synchronously SIGKILL the daemon and every QEMU naming the data dir and delete the
 * temp dir (copying the daemon log first when asked); on a signal also remove the prefix's network
 * objects (bounded), then exit 130/143.
 */
import { copyFileSync, rmSync } from 'node:fs';
import { removeHostNetwork } from './host-cleanup.js';
import { killPidsSync, qemuProcessesNaming } from './qemu-processes.js';

/** What to clean up for one harness. */
export interface InterruptCleanupTarget {
  /** SIGKILL the daemon child, if it runs. */
  killDaemon(): void;
  dataDir: string;
  tempDir: string;
  logPath: string;
  /** Copy the log here before deleting the temp dir; undefined: not kept. */
  keepLogAt: string | undefined;
  /** Network prefix whose objects are removed on a signal. */
  prefix: string;
}

/** How long a signalled process may spend removing network objects before it exits anyway, ms. */
const SIGNAL_CLEANUP_MS = 20_000;

/** Arm the hooks; returns the function that disarms them (call it at the end of a normal teardown). */
export function armInterruptCleanup(target: InterruptCleanupTarget): () => void {
  const killNow = (): void => {
    target.killDaemon();
    killPidsSync(qemuProcessesNaming(`${target.dataDir}/`).map((p) => p.pid));
    if (target.keepLogAt) {
      try {
        copyFileSync(target.logPath, target.keepLogAt);
      } catch {
        // No log yet.
      }
    }
    rmSync(target.tempDir, { recursive: true, force: true });
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    killNow();
    const exit = (): never => process.exit(signal === 'SIGINT' ? 130 : 143);
    setTimeout(exit, SIGNAL_CLEANUP_MS).unref();
    void removeHostNetwork(target.prefix).finally(exit);
  };
  process.on('exit', killNow);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return () => {
    process.off('exit', killNow);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}
