/**
 * A minimal QMP (QEMU Machine Protocol) client over a unix socket: JSON objects, one per line. The
 * server greets, the client negotiates with `qmp_capabilities`, then each `execute` carries an `id`
 * matched to its `return`/`error`; asynchronous `event`s are ignored (progress is polled with `query-*`).
 * (npm has no maintained QMP client; `qemu-qmp` is a single untyped 0.x release.)
 */
import { connect, type Socket } from 'node:net';
import { RamifyError } from '@ramify/contracts';

interface Pending {
  command: string;
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

export class QmpClient {
  private buffer = '';
  private nextId = 1;
  private readonly pending = new Map<string, Pending>();
  private greeted: (() => void) | undefined;
  private closedWith: Error | null = null;

  private constructor(private readonly socket: Socket, private readonly path: string) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.onData(chunk));
    const fail = (error: Error): void => {
      this.closedWith ??= error;
      for (const p of this.pending.values()) p.reject(new RamifyError('RUNTIME_ERROR', `QMP ${p.command}: ${this.closedWith.message}`));
      this.pending.clear();
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('QEMU closed the QMP connection')));
  }

  /**
   * Connect to the QMP socket at `path` and negotiate capabilities, retrying while the socket does not
   * accept yet, for at most `timeoutMs`. Rejects `RUNTIME_ERROR` after that.
   */
  static async connect(path: string, timeoutMs = 10_000): Promise<QmpClient> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        return await QmpClient.tryConnect(path, Math.max(500, deadline - Date.now()));
      } catch (err) {
        if (Date.now() >= deadline) throw new RamifyError('RUNTIME_ERROR', `QMP socket ${path} did not answer within ${timeoutMs} ms: ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    }
  }

  private static tryConnect(path: string, timeoutMs: number): Promise<QmpClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(path);
      const client = new QmpClient(socket, path);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error('no QMP greeting'));
      }, timeoutMs);
      socket.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      client.greeted = () => {
        clearTimeout(timer);
        client.execute('qmp_capabilities').then(() => resolve(client), reject);
      };
    });
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl).trim();
      this.buffer = this.buffer.slice(nl + 1);
      if (line) this.onMessage(JSON.parse(line) as Record<string, unknown>);
    }
  }

  private onMessage(msg: Record<string, unknown>): void {
    if ('QMP' in msg) {
      this.greeted?.();
      this.greeted = undefined;
      return;
    }
    if (typeof msg.event === 'string') return; // Asynchronous events: nothing here waits for them.
    const id = String(msg.id);
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    if ('error' in msg) {
      const e = msg.error as { class?: string; desc?: string };
      p.reject(new RamifyError('RUNTIME_ERROR', `QMP ${p.command} failed: ${e.desc ?? e.class ?? 'unknown error'}`, { qmpClass: e.class }));
    } else p.resolve(msg.return);
  }

  /** Run `command` with `args`; resolves with its `return` value. Rejects `RUNTIME_ERROR` with QEMU's description. */
  execute<T = unknown>(command: string, args?: Record<string, unknown>): Promise<T> {
    if (this.closedWith) return Promise.reject(new RamifyError('RUNTIME_ERROR', `QMP ${command}: ${this.closedWith.message} (${this.path})`));
    const id = String(this.nextId++);
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { command, resolve: resolve as (v: unknown) => void, reject });
      this.socket.write(JSON.stringify(args ? { execute: command, arguments: args, id } : { execute: command, id }) + '\n');
    });
  }

  close(): void {
    this.socket.destroy();
  }
}

/** `query-migrate`'s answer (the fields this runtime reads). */
export interface MigrationInfo {
  status?: string;
  'error-desc'?: string;
}

/**
 * Poll `query-migrate` until the migration (outgoing or incoming) is `completed`. Rejects
 * `RUNTIME_ERROR` when it fails, is cancelled, or is not done within `timeoutMs`.
 */
export async function waitForMigration(qmp: QmpClient, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let delay = 5;
  for (;;) {
    const info = await qmp.execute<MigrationInfo>('query-migrate');
    if (info.status === 'completed') return;
    if (info.status === 'failed' || info.status === 'cancelled') {
      throw new RamifyError('RUNTIME_ERROR', `${what} ${info.status}${info['error-desc'] ? `: ${info['error-desc']}` : ''}`);
    }
    if (Date.now() > deadline) throw new RamifyError('RUNTIME_ERROR', `${what} did not complete within ${timeoutMs} ms (status ${info.status ?? 'none'})`);
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 50);
  }
}
