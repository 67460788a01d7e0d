/**
 * One daemon per data directory: `serve()` takes an exclusive lock on `<dataDir>/daemon.lock` before it
 * touches anything (the store, the network, the egress table and its ulogd NFLOG group), and a second
 * daemon on the same directory stops at once with `DATA_DIR_IN_USE` naming the holder (pid, API URL,
 * program, start time) and how to stop it.
 *
 * The lock and its record are record-lock.ts's (an open file description lock the kernel drops when the
 * holder exits, killed or not; a file never removed; the holder's {@link DataDirHolderRecord} as one JSON
 * line, read only to name the holder): docs/design/ARCHITECTURE.md, "One daemon per data directory".
 *
 * This module is also the light entry `@ramify/daemon/data-dir-lock`: `ramify serve --detach` asks it who
 * holds a data directory without loading the daemon (it imports only `@ramify/contracts/client`).
 */
import { readFileSync, realpathSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RamifyError } from '@ramify/contracts/client';
import { isLockHeld, lockWithRecord, readLockRecord } from './record-lock.js';

/** The lock file's name in the data directory. */
export const DATA_DIR_LOCK_FILE = 'daemon.lock';

/** A held lock on a data directory. */
export interface DataDirLock {
  /** `<dataDir>/daemon.lock`. */
  readonly path: string;
  /** Add `fields` to what the lock file says about this holder (`serve()` records its API URL once it listens). */
  record(fields: Pick<DataDirHolderRecord, 'url'>): void;
  /** Let the next daemon have the directory (idempotent). */
  release(): void;
}

/** What the lock file says about its holder (one JSON line). */
export interface DataDirHolderRecord {
  pid: number;
  /** ISO 8601. */
  startedAt: string;
  /** The script the holder runs (`process.argv[1]`, symlinks resolved: which clone's `ramify`), absent in files of older daemons. */
  program?: string;
  /** The holder's API URL (`http://127.0.0.1:7423`), recorded once it listens; absent before. */
  url?: string;
}

/** The process holding a data directory's lock, as {@link dataDirHolder} and `DATA_DIR_IN_USE` name it. */
export interface DataDirHolder {
  /** The data directory, absolute. */
  dataDir: string;
  /** null while the holder has not written the file yet (it is starting). */
  pid: number | null;
  /** ISO 8601; null when unknown. */
  startedAt: string | null;
  /** Its API URL; null before it listens (or for a lock not held by a daemon, e.g. `--reset-network`). */
  url: string | null;
  /** The script it runs, from the lock file, else from `/proc/<pid>/cmdline`; null when neither says. */
  program: string | null;
}

/**
 * Take the data directory's lock (the directory must exist) and write this process's {@link DataDirHolderRecord}.
 * @throws RamifyError `DATA_DIR_IN_USE` when another daemon holds it (details: see {@link dataDirInUse});
 *   the file system's error when the file cannot be opened.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  const path = join(dataDir, DATA_DIR_LOCK_FILE);
  let record: DataDirHolderRecord = { pid: process.pid, startedAt: new Date().toISOString(), program: thisProgram() };
  const lock = lockWithRecord(path, record);
  if (!lock) throw dataDirInUse(holderOf(dataDir, readRecord(path)));
  return {
    path,
    record: (fields) => {
      record = { ...record, ...fields };
      lock.write(record);
    },
    release: () => lock.release(),
  };
}

/**
 * The process holding `dataDir`'s lock now, or null when none does (no lock file, or the lock is free).
 * Reads the lock file and never writes it. It probes with a shared lock taken and dropped at once: a daemon
 * starting on the directory in that same instant would be refused as if the directory were held.
 * @throws the file system's error when the lock file exists but cannot be opened.
 */
export function dataDirHolder(dataDir: string): DataDirHolder | null {
  const path = join(dataDir, DATA_DIR_LOCK_FILE);
  return isLockHeld(path) ? holderOf(dataDir, readRecord(path)) : null;
}

/**
 * `pid 1234, API http://127.0.0.1:7423, program /home/a/ramify/packages/cli/dist/main.js, started
 * 2026-12-07T09:40:00.000Z`: what names a holder in messages (the parts it knows).
 */
export function describeHolder(holder: DataDirHolder): string {
  if (holder.pid === null) return 'a process that is starting';
  return [
    `pid ${holder.pid}`,
    ...(holder.url ? [`API ${holder.url}`] : []),
    ...(holder.program ? [`program ${holder.program}`] : []),
    ...(holder.startedAt ? [`started ${holder.startedAt}`] : []),
  ].join(', ');
}

/** `kill 1234 (SIGTERM: ...)`: how to stop a holder (the CLI has no stop command; the daemon stops cleanly on SIGTERM). */
export function stopHint(holder: DataDirHolder): string {
  return holder.pid === null
    ? `SIGTERM to the pid it writes in ${join(holder.dataDir, DATA_DIR_LOCK_FILE)} as it starts`
    : `kill ${holder.pid} (SIGTERM: it stops cleanly; its sandboxes keep running)`;
}

/**
 * The `DATA_DIR_IN_USE` error of a directory `holder` holds: its message names the directory, the holder
 * ({@link describeHolder}), how to stop it and how to run a second daemon; details `dataDir`, `pid` (null
 * when unknown), `url`, `program`, `startedAt`.
 */
export function dataDirInUse(holder: DataDirHolder): RamifyError {
  return new RamifyError(
    'DATA_DIR_IN_USE',
    `the data directory '${holder.dataDir}' is in use by another ramify daemon (${describeHolder(holder)}). One daemon per data directory: `
      + `stop that daemon first, with ${stopHint(holder)}, or give this one a data directory of its own (--data-dir DIR or RAMIFY_HOME, and its own --port, --network-prefix, --ingress-listen and --ssh-listen, or 'off' for those two)`,
    { dataDir: holder.dataDir, pid: holder.pid, url: holder.url, program: holder.program, startedAt: holder.startedAt },
  );
}

function holderOf(dataDir: string, record: DataDirHolderRecord | null): DataDirHolder {
  return {
    dataDir: resolve(dataDir),
    pid: record?.pid ?? null,
    startedAt: record?.startedAt ?? null,
    url: record?.url ?? null,
    program: record?.program ?? (record ? programOf(record.pid) : null),
  };
}

/** The script this process runs, symlinks resolved (`/usr/local/bin/ramify` -> the clone's `main.js`); this module's own path without one. */
function thisProgram(): string {
  const script = process.argv[1];
  if (script) {
    try {
      return realpathSync(script);
    } catch {
      return resolve(script);
    }
  }
  return fileURLToPath(import.meta.url);
}

/** The script process `pid` runs, from `/proc/<pid>/cmdline` (its first argument after the interpreter that is not a flag); null when gone or unreadable. */
export function programOf(pid: number): string | null {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
    return argv.slice(1).find((a) => !a.startsWith('-')) ?? argv[0] ?? null;
  } catch {
    return null;
  }
}

function readRecord(path: string): DataDirHolderRecord | null {
  return readLockRecord(path, (fields) => {
    if (typeof fields.pid !== 'number' || typeof fields.startedAt !== 'string') return null;
    return {
      pid: fields.pid, startedAt: fields.startedAt,
      ...(typeof fields.program === 'string' ? { program: fields.program } : {}),
      ...(typeof fields.url === 'string' ? { url: fields.url } : {}),
    };
  });
}
