/**
 * An exclusive lock on a file that also says who holds it: the lock of a data directory (data-dir-lock.ts)
 * and of a network prefix (network-prefix-lock.ts) are both this.
 *
 * The lock is an open file description lock (Linux `fcntl(F_OFD_SETLK)`, through `fs-native-extensions`):
 * the kernel drops it when the holder's last descriptor of the file closes, so a holder that crashes or is
 * killed with `kill -9` leaves no stale lock, and no pid is ever guessed alive or dead. Two opens conflict
 * even within one process. Node opens files close-on-exec: children never inherit it. The file is never
 * removed (a removed lock file lets two processes lock two different files); it holds the holder's record
 * as one JSON line, read only to name the holder in the refusal (docs/design/ARCHITECTURE.md, "One daemon
 * per data directory").
 *
 * Light on purpose: only Node's built-ins and `fs-native-extensions`, because data-dir-lock.ts is the light
 * entry `@ramify/daemon/data-dir-lock` that `ramify serve --detach` loads without the daemon.
 */
import { closeSync, constants, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';

/** A held lock whose file holds a record of type `R`. */
export interface RecordLock<R extends object> {
  /** The lock file. */
  readonly path: string;
  /** Replace the record in the file (no-op once released). */
  write(record: R): void;
  /** Let the next taker have the lock (idempotent). */
  release(): void;
}

const nativeLock = createRequire(import.meta.url)('fs-native-extensions') as { tryLock(fd: number, options?: { shared?: boolean }): boolean };

/**
 * Take `path`'s lock (the file is created, mode 0600, in a directory that must exist) and write `record`
 * to it; null when another open file description holds it (read its holder with {@link readLockRecord}).
 * The file is opened without truncating: the holder's record stays readable until this process holds the lock.
 * @throws the file system's error when the file cannot be opened, or the lock cannot be tried.
 */
export function lockWithRecord<R extends object>(path: string, record: R): RecordLock<R> | null {
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o600);
  let locked = false;
  try {
    locked = nativeLock.tryLock(fd);
  } finally {
    if (!locked) closeSync(fd);
  }
  if (!locked) return null;
  let held = true;
  const write = (next: R): void => {
    if (!held) return;
    // Written over the old content, then cut to length: a reader sees the old record or the new one
    // (a longer record covers the old one entirely), never an empty file.
    const line = Buffer.from(`${JSON.stringify(next)}\n`);
    writeSync(fd, line, 0, line.length, 0);
    ftruncateSync(fd, line.length);
  };
  write(record);
  return {
    path,
    write,
    release: () => {
      if (!held) return;
      held = false;
      closeSync(fd);
    },
  };
}

/**
 * Whether some process holds `path`'s lock now: false when the file does not exist or the lock is free.
 * Never writes the file. It probes with a shared lock taken and dropped at once: a taker in that same
 * instant is refused as if the lock were held.
 * @throws the file system's error when the file exists but cannot be opened.
 */
export function isLockHeld(path: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  try {
    return !nativeLock.tryLock(fd, { shared: true });
  } finally {
    closeSync(fd);
  }
}

/**
 * The record in lock file `path`, checked by `parse` (given the parsed JSON object; null: not a record);
 * null when the file is missing, empty (its holder is starting), not JSON or not a record.
 */
export function readLockRecord<R>(path: string, parse: (fields: Record<string, unknown>) => R | null): R | null {
  try {
    const parsed: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? parse(parsed as Record<string, unknown>) : null;
  } catch {
    return null; // being written, or not ours: the message says less
  }
}
