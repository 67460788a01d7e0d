/**
 * The daemon's listeners (API, ingress, SSH, metrics) checked before `serve()` sets anything up, and the
 * `ADDRESS_IN_USE` error that names a taken address: which listener, the process holding it (`ss -ltnp`,
 * and the data directory whose `daemon.lock` it holds open when it is a ramify daemon) and the flag that
 * moves it (docs/design/ARCHITECTURE.md, "A failed start").
 *
 * This module is also the light entry `@ramify/daemon/listen-check`: `ramify serve --detach` names the
 * process answering on a port with {@link portListener} without loading the daemon (it imports only
 * `@ramify/contracts/client` and `./data-dir-lock.js`).
 */
import { execFile } from 'node:child_process';
import { readdirSync, readlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { basename, dirname } from 'node:path';
import { promisify } from 'node:util';
import { RamifyError } from '@ramify/contracts/client';
import { DATA_DIR_LOCK_FILE, dataDirHolder, describeHolder, programOf, stopHint, type DataDirHolder } from './data-dir-lock.js';

/** Which of the daemon's listeners an address is for. */
export type ListenerKind = 'api' | 'ingress' | 'ssh' | 'metrics';

/** One listener `serve()` is about to open. */
export interface PlannedListener {
  kind: ListenerKind;
  host: string;
  /** 0: any free port (never checked: it cannot be taken). */
  port: number;
}

/** The process listening on a TCP port, as {@link portListener} finds it. */
export interface PortListener {
  pid: number;
  /** Its script (`/proc/<pid>/cmdline`); null when unreadable. */
  program: string | null;
  /** The data directory's holder when the process holds a `daemon.lock` open (a ramify daemon); else null. */
  holder: DataDirHolder | null;
}

/** What each listener is called in messages, and the flag that moves it (`ramify serve`'s). */
const LISTENERS: Record<ListenerKind, { name: string; fix: string }> = {
  api: { name: 'API', fix: 'another --port (0 picks a free one) or --host' },
  ingress: { name: 'ingress (port URLs)', fix: 'another --ingress-listen ADDR:PORT, or --ingress-listen off for no port URLs' },
  ssh: { name: 'SSH gateway', fix: 'another --ssh-listen ADDR:PORT, or --ssh-listen off for no SSH gateway' },
  metrics: { name: 'metrics', fix: 'another --metrics-listen ADDR:PORT, or no --metrics-listen' },
};

/** `127.0.0.1:7423`, `[::1]:7423`. */
export function formatAddress(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * Check that every listener's address can be bound, before anything else is set up: each is bound (all
 * at once, so two listeners given one address conflict too) and closed again. Every listener is tried, so
 * one error names every taken address (a newcomer fixed them one run at a time). The listeners bind for
 * real later; one taken in between fails there with the same error ({@link asAddressInUse}).
 * @throws RamifyError `ADDRESS_IN_USE` (see {@link addressInUse}) for the first taken address, its message
 *   and `details.alsoTaken` (`[{ listener, address }]`) naming the others; the listen error itself for any
 *   other failure (EADDRNOTAVAIL: not an address of this host; EACCES: a port below 1024 without root).
 */
export async function checkListeners(listeners: readonly PlannedListener[]): Promise<void> {
  const bound: Array<{ listener: PlannedListener; server: Server }> = [];
  const failures: unknown[] = [];
  try {
    for (const listener of listeners) {
      if (listener.port === 0) continue;
      const server = createServer();
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen({ host: listener.host, port: listener.port }, () => resolve());
        });
        bound.push({ listener, server });
      } catch (err) {
        const own = bound.find((b) => b.listener.port === listener.port);
        failures.push(await asAddressInUse(err, listener, own?.listener));
      }
    }
  } finally {
    await Promise.all(bound.map(({ server }) => new Promise<void>((resolve) => server.close(() => resolve()))));
  }
  const [first, ...others] = failures;
  if (first === undefined) return;
  const inUse = (err: unknown): err is RamifyError => err instanceof RamifyError && err.code === 'ADDRESS_IN_USE';
  if (!inUse(first)) throw first;
  const alsoTaken = others.filter(inUse).map((err) => err.details as { listener: ListenerKind; address: string });
  if (alsoTaken.length === 0) throw first;
  const more = alsoTaken.map(({ listener, address }) => `the ${LISTENERS[listener].name} address ${address} (${LISTENERS[listener].fix})`).join('; ');
  throw new RamifyError('ADDRESS_IN_USE', `${first.message}. Also taken: ${more}`, { ...first.details, alsoTaken: alsoTaken.map(({ listener, address }) => ({ listener, address })) });
}

/**
 * Run `listen` (a listener's start); an address-in-use failure becomes {@link addressInUse} for `listener`.
 * @throws RamifyError `ADDRESS_IN_USE`; whatever else `listen` throws, unchanged.
 */
export async function startListener<T>(listener: PlannedListener, listen: () => Promise<T>): Promise<T> {
  try {
    return await listen();
  } catch (err) {
    throw await asAddressInUse(err, listener);
  }
}

/**
 * `err` as {@link addressInUse} of `listener` when it is an `EADDRINUSE` (a Node listen error, or one passed
 * on by a worker thread with its code), else `err` unchanged. `sibling`: another listener of this daemon
 * that took the address first.
 */
export async function asAddressInUse(err: unknown, listener: PlannedListener, sibling?: PlannedListener): Promise<unknown> {
  if ((err as { code?: unknown } | null)?.code !== 'EADDRINUSE') return err;
  if (sibling) return addressInUse(listener, `this daemon's own ${LISTENERS[sibling.kind].name} listener (two listeners were given the same address)`, false);
  const found = await portListener(listener.port);
  // This process: a caller of serve() (a test) that holds the address itself.
  return addressInUse(listener, found?.pid === process.pid ? `this process (pid ${process.pid})`
    : `${found?.holder ? 'another ramify daemon' : 'another process'} (${describePortListener(found)})`);
}

/**
 * The `ADDRESS_IN_USE` error of `listener`: its message names the listener, the address, `heldBy` (who
 * holds it), to stop it (unless `stoppable` is false: another listener of this daemon) and the flag to
 * change; details `listener`, `address`, `heldBy`.
 */
export function addressInUse(listener: PlannedListener, heldBy: string, stoppable = true): RamifyError {
  const { name, fix } = LISTENERS[listener.kind];
  const address = formatAddress(listener.host, listener.port);
  return new RamifyError('ADDRESS_IN_USE', `the ${name} address ${address} is in use by ${heldBy}. ${stoppable ? 'Stop it, or give' : 'Give'} this daemon ${fix}`, { listener: listener.kind, address, heldBy });
}

/**
 * Who listens on a port, for messages: a ramify daemon's `pid 1234, API ..., data directory D; to stop it:
 * kill 1234 ...`, another process's `pid 1234, program /usr/bin/python3`, or, when {@link portListener}
 * found none, `one this user cannot name ...`.
 */
export function describePortListener(listener: PortListener | null): string {
  if (listener === null) return 'one this user cannot name (ss -ltnp shows listeners)';
  if (listener.holder) return `${describeHolder(listener.holder)}, data directory ${listener.holder.dataDir}; to stop it: ${stopHint(listener.holder)}`;
  return `pid ${listener.pid}${listener.program ? `, program ${listener.program}` : ''}`;
}

/**
 * The process listening on TCP `port` (from `ss -Hltnp`), its script (`/proc/<pid>/cmdline`) and, when it
 * holds a data directory's lock open, that directory's holder; null when `ss` is missing or names no process
 * (another user's, without root).
 */
export async function portListener(port: number): Promise<PortListener | null> {
  let out: string;
  try {
    out = (await promisify(execFile)('ss', ['-Hltnp', `sport = :${port}`], { timeout: 5000 })).stdout;
  } catch {
    return null;
  }
  const pid = Number(/pid=(\d+)/.exec(out)?.[1] ?? NaN);
  if (!Number.isInteger(pid)) return null;
  const program = programOf(pid);
  let holder: DataDirHolder | null = null;
  try {
    const lockPath = readdirSync(`/proc/${pid}/fd`).map((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return '';
      }
    }).find((target) => basename(target) === DATA_DIR_LOCK_FILE);
    if (lockPath) holder = dataDirHolder(dirname(lockPath));
  } catch {
    /* another user's process: its descriptors are not ours to read */
  }
  return { pid, program, holder };
}
