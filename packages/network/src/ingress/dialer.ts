/**
 * `IngressDialer`: opens the ingress's TCP connections to sandboxes from a helper process that runs as a
 * dedicated uid (default {@link DEFAULT_INGRESS_UID}), so that the ingress firewall can tell them from
 * every other socket on the host (`meta skuid`). The helper connects and hands the connected socket to the
 * daemon over Node's IPC channel (SCM_RIGHTS underneath), then closes its copy; the daemon reads and writes
 * the socket directly, so no byte passes through the helper. A socket keeps the uid it was made with.
 *
 * Lifecycle: `new` → `start()` (spawns the helper) → `dial()` any number of times → `close()`. A helper
 * that dies is started again at the next dial.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';

/**
 * Default uid (and gid) of the dialer: in the range systemd leaves unallocated (1879048192-2147483646),
 * so no login user or container mapping has it. Configurable (`ramify serve --ingress-uid`).
 */
export const DEFAULT_INGRESS_UID = 2_147_000_000;

/** Why a dial failed: the socket error's code (`ECONNREFUSED`, `ETIMEDOUT`, `EHOSTUNREACH`, ...). */
export class DialError extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
    this.name = 'DialError';
  }
}

export interface IngressDialerOptions {
  /** uid and gid of the helper; default {@link DEFAULT_INGRESS_UID}. */
  uid?: number;
  /** A connect that takes longer fails `ETIMEDOUT`, ms; default 10000. */
  connectTimeoutMs?: number;
}

// The helper: connect on request, pause (no byte read here), hand the socket over, close its copy.
const HELPER = `
const net = require('node:net');
process.on('message', (m) => {
  const s = net.connect({ host: m.host, port: m.port, timeout: m.timeoutMs });
  s.pause();
  const fail = (code, message) => { s.destroy(); process.send({ id: m.id, ok: false, code, message }); };
  s.once('timeout', () => fail('ETIMEDOUT', 'connect timed out'));
  s.once('error', (e) => fail(e.code || 'EIO', e.message));
  s.once('connect', () => { s.removeAllListeners(); s.setTimeout(0); process.send({ id: m.id, ok: true }, s); });
});
process.on('disconnect', () => process.exit(0));
`;

interface Pending {
  resolve: (socket: Socket) => void;
  reject: (err: Error) => void;
}

interface Reply {
  id: number;
  ok: boolean;
  code?: string;
  message?: string;
}

export class IngressDialer {
  readonly uid: number;
  private readonly connectTimeoutMs: number;
  private child: ChildProcess | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  constructor(options: IngressDialerOptions = {}) {
    this.uid = options.uid ?? DEFAULT_INGRESS_UID;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  }

  /** Start the helper (idempotent). */
  start(): void {
    if (this.child || this.closed) return;
    const child = spawn(process.execPath, ['-e', HELPER], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], uid: this.uid, gid: this.uid, cwd: '/' });
    child.on('message', (message: Reply, handle: unknown) => this.settle(message, handle as Socket | undefined));
    child.on('exit', () => {
      if (this.child === child) this.child = null;
      for (const [id, p] of this.pending) {
        this.pending.delete(id);
        p.reject(new DialError('EIO', 'the ingress dialer exited'));
      }
    });
    child.on('error', () => undefined);
    this.child = child;
  }

  /**
   * A connected socket to `host:port`, made by the helper (paused: resume or pipe it).
   * @throws DialError with the connect's error code.
   */
  dial(host: string, port: number): Promise<Socket> {
    if (this.closed) return Promise.reject(new DialError('EIO', 'the ingress dialer is closed'));
    this.start();
    const child = this.child;
    if (!child) return Promise.reject(new DialError('EIO', 'the ingress dialer could not start'));
    const id = this.nextId++;
    return new Promise<Socket>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      child.send({ id, host, port, timeoutMs: this.connectTimeoutMs }, (err) => {
        if (!err) return;
        this.pending.delete(id);
        reject(new DialError('EIO', `the ingress dialer is unreachable: ${err.message}`));
      });
    });
  }

  private settle(message: Reply, handle: Socket | undefined): void {
    const p = this.pending.get(message.id);
    if (!p) {
      handle?.destroy();
      return;
    }
    this.pending.delete(message.id);
    if (message.ok && handle) p.resolve(handle);
    else p.reject(new DialError(message.code ?? 'EIO', message.message ?? 'connect failed'));
  }

  /** Stop the helper; pending dials fail. Sockets already handed over stay open. */
  close(): void {
    this.closed = true;
    this.child?.disconnect();
    this.child?.kill();
    this.child = null;
  }
}
