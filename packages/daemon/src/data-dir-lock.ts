/**
 * One daemon per data directory: `serve()` takes an exclusive lock on `<dataDir>/daemon.lock` before it
 * touches anything (the store, the network, the egress table and its ulogd NFLOG group), and a second
 * daemon on the same directory stops at once with `DATA_DIR_IN_USE` naming the holder's pid.
 *
 * The lock is an open file description lock (Linux `fcntl(F_OFD_SETLK)`, through `fs-native-extensions`):
 * the kernel drops it when the holder's last descriptor of the file closes, so a daemon that crashes or is
 * killed with `kill -9` leaves no stale lock, and no pid is ever guessed alive or dead. Two opens conflict
 * even within one process, so a second `serve()` in the same process is refused too. Node opens files
 * close-on-exec: the daemon's children (runsc, ulogd) never inherit it. The file is never removed (a
 * removed lock file lets two daemons lock two different files); its content, `{ pid, startedAt }` of the
 * holder, is read only to name the holder in the error.
 */
import { closeSync, constants, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { RamifyError } from '@ramify/contracts';

/** The lock file's name in the data directory. */
export const DATA_DIR_LOCK_FILE = 'daemon.lock';

/** A held lock on a data directory. */
export interface DataDirLock {
  /** `<dataDir>/daemon.lock`. */
  readonly path: string;
  /** Let the next daemon have the directory (idempotent). */
  release(): void;
}

/** What the lock file says about its holder. */
interface Holder {
  pid: number;
  /** ISO 8601. */
  startedAt: string;
}

const nativeLock = createRequire(import.meta.url)('fs-native-extensions') as { tryLock(fd: number, options?: { shared?: boolean }): boolean };

/**
 * Take the data directory's lock (the directory must exist).
 * @throws RamifyError `DATA_DIR_IN_USE` when another daemon holds it (details: `dataDir`, `pid` of the holder
 *   or null when it has not written it yet); the file system's error when the file cannot be opened.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, DATA_DIR_LOCK_FILE);
  // Opened without truncating: the holder's pid stays readable until this process holds the lock.
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
  let locked: boolean;
  try {
    locked = nativeLock.tryLock(fd);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  if (!locked) {
    closeSync(fd);
    throw inUse(dataDir, readHolder(path));
  }
  const holder: Holder = { pid: process.pid, startedAt: new Date().toISOString() };
  ftruncateSync(fd, 0);
  writeSync(fd, `${JSON.stringify(holder)}\n`, 0);
  let held = true;
  return {
    path,
    release: () => {
      if (!held) return;
      held = false;
      closeSync(fd);
    },
  };
}

function inUse(dataDir: string, holder: Holder | null): RamifyError {
  const who = holder ? `pid ${holder.pid}, started ${holder.startedAt}` : 'a process that is starting';
  return new RamifyError(
    'DATA_DIR_IN_USE',
    `the data directory '${dataDir}' is in use by another ramify daemon (${who}). One daemon per data directory: `
      + 'stop that daemon first, or give this one a data directory of its own (--data-dir DIR or RAMIFY_HOME, and its own --network-prefix)',
    { dataDir, pid: holder?.pid ?? null },
  );
}

function readHolder(path: string): Holder | null {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<Holder>;
    return typeof parsed.pid === 'number' && typeof parsed.startedAt === 'string' ? { pid: parsed.pid, startedAt: parsed.startedAt } : null;
  } catch {
    return null;
  }
}
