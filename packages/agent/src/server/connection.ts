/**
 * One client connection to the agent (one bridge on the socket, or one host connection on the virtio
 * port). Decodes frames, runs requests concurrently, pushes process output to its subscriptions at the
 * pace the stream accepts, and routes file-stream frames. When the connection closes, its subscriptions
 * and streams end; the processes keep running.
 */
import type { Duplex } from 'node:stream';
import { encodeFrame, FrameDecoder } from '../protocol/framing.js';
import { MAX_DATA_CHUNK_BYTES, messageTag, type AgentMessage, type RequestMessage, type StreamMessage } from '../protocol/messages.js';
import { fromWireError, toWireError } from '../protocol/wire-errors.js';
import type { ManagedProcess, OutputFd, OutputSubscriber } from './managed-process.js';
import { StreamRegistry, type FrameSink } from './stream-registry.js';

/** Runs one request; resolves with its result or rejects with a (preferably typed) error. */
export type RequestHandler = (method: string, params: unknown, conn: AgentConnection) => Promise<unknown>;

class Subscription implements OutputSubscriber {
  cursor: Record<OutputFd, number>;
  constructor(readonly id: number, readonly proc: ManagedProcess, from: Record<OutputFd, number>, private readonly wake: () => void) {
    this.cursor = { ...from };
  }
  notify(): void {
    this.wake();
  }
}

export class AgentConnection implements FrameSink {
  readonly streams = new StreamRegistry();
  private readonly subs = new Map<number, Subscription>();
  /** Subscriptions other than process output (watches): what ends each, by subscription id. */
  private readonly cleanups = new Map<number, () => void>();
  private readonly decoder = new FrameDecoder();
  private closed = false;
  private readonly closeListeners: Array<() => void> = [];
  private pumpScheduled = false;
  private drainWaiting = false;

  constructor(private readonly socket: Duplex, private readonly handle: RequestHandler, private readonly log: (line: string) => void) {
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('error', () => undefined);
    socket.on('end', () => socket.end());
    socket.on('close', () => this.teardown());
  }

  send(message: AgentMessage): void {
    if (this.closed) return;
    this.socket.write(encodeFrame(message));
  }

  writable(): Promise<void> {
    if (this.closed || !this.socket.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        this.socket.off('drain', done);
        this.socket.off('close', done);
        resolve();
      };
      this.socket.on('drain', done);
      this.socket.on('close', done);
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Call `listener` once when the connection has closed (at once if it has). */
  onClosed(listener: () => void): void {
    if (this.closed) queueMicrotask(listener);
    else this.closeListeners.push(listener);
  }

  /** Start delivering `proc`'s output from `from` on as subscription `id` (replacing one with that id). */
  subscribe(id: number, proc: ManagedProcess, from: Record<OutputFd, number>): void {
    this.unsubscribe(id);
    if (this.closed) return; // Closed while the request ran: a subscriber nobody reads would stall the process.
    const sub = new Subscription(id, proc, from, () => this.schedulePump());
    this.subs.set(id, sub);
    proc.subscribe(sub);
  }

  /** Run `cleanup` once when subscription `id` is unsubscribed or the connection closes (at once if it has). */
  onUnsubscribe(id: number, cleanup: () => void): void {
    this.unsubscribe(id);
    if (this.closed) cleanup();
    else this.cleanups.set(id, cleanup);
  }

  unsubscribe(id: number): void {
    const cleanup = this.cleanups.get(id);
    this.cleanups.delete(id);
    cleanup?.();
    const sub = this.subs.get(id);
    if (!sub) return;
    this.subs.delete(id);
    sub.proc.unsubscribe(sub);
  }

  private receive(chunk: Buffer): void {
    let messages: unknown[];
    try {
      messages = this.decoder.push(chunk);
    } catch (err) {
      this.log(`protocol error, dropping connection: ${(err as Error).message}`);
      this.socket.destroy();
      return;
    }
    for (const msg of messages) {
      const tag = messageTag(msg);
      if (tag === 'req') this.request(msg as RequestMessage);
      else if (tag === 'data' || tag === 'end' || tag === 'credit' || tag === 'cancel') this.stream(msg as StreamMessage);
      else this.log(`ignoring message with tag ${String(tag)}`);
    }
  }

  private request(req: RequestMessage): void {
    this.handle(req.m, req.p ?? {}, this).then(
      (r) => this.send({ t: 'res', id: req.id, r: r ?? {} }),
      (err) => this.send({ t: 'res', id: req.id, e: toWireError(err) }),
    );
  }

  private stream(msg: StreamMessage): void {
    const h = this.streams.get(msg.sid);
    if (!h) return; // Finished or cancelled already.
    if (msg.t === 'data') h.onData?.(msg.data);
    else if (msg.t === 'credit') h.onCredit?.(msg.n);
    else if (msg.t === 'end') h.onEnd?.(msg.e ? fromWireError(msg.e) : undefined);
    else {
      this.streams.delete(msg.sid);
      h.onClose?.('cancelled by the client');
    }
  }

  private schedulePump(): void {
    if (this.pumpScheduled || this.closed) return;
    this.pumpScheduled = true;
    setImmediate(() => this.pump());
  }

  /** Send pending output round-robin, one chunk per subscription per round, while the socket takes it. */
  private pump(): void {
    this.pumpScheduled = false;
    if (this.closed) return;
    const touched = new Set<ManagedProcess>();
    let progress = true;
    while (progress && !this.socket.writableNeedDrain) {
      progress = false;
      for (const sub of [...this.subs.values()]) {
        touched.add(sub.proc);
        if (this.pumpOne(sub)) progress = true;
        if (this.socket.writableNeedDrain) break;
      }
    }
    for (const proc of touched) proc.consumed();
    if (this.socket.writableNeedDrain && !this.drainWaiting) {
      this.drainWaiting = true;
      this.socket.once('drain', () => {
        this.drainWaiting = false;
        this.schedulePump();
      });
    }
  }

  /** Send one output chunk, or the exit, for `sub`. @returns whether anything was sent. */
  private pumpOne(sub: Subscription): boolean {
    const proc = sub.proc;
    for (const fd of [1, 2] as const) {
      const ring = proc.rings[fd];
      const limit = proc.finalEnds ? proc.finalEnds[fd] : ring.end;
      if (sub.cursor[fd] < ring.start) sub.cursor[fd] = ring.start; // Dropped bytes: skip the gap.
      if (sub.cursor[fd] < limit) {
        const data = ring.read(sub.cursor[fd], Math.min(MAX_DATA_CHUNK_BYTES, limit - sub.cursor[fd]));
        this.send({ t: 'out', sub: sub.id, fd, off: sub.cursor[fd], data });
        sub.cursor[fd] += data.byteLength;
        return true;
      }
    }
    if (proc.exit && proc.finalEnds && sub.cursor[1] >= proc.finalEnds[1] && sub.cursor[2] >= proc.finalEnds[2]) {
      this.send({ t: 'exit', sub: sub.id, exit: proc.exit });
      this.unsubscribe(sub.id);
      return true;
    }
    return false;
  }

  private teardown(): void {
    if (this.closed) return;
    this.closed = true;
    for (const id of [...this.subs.keys(), ...this.cleanups.keys()]) this.unsubscribe(id);
    this.streams.closeAll('connection closed');
    for (const listener of this.closeListeners.splice(0)) listener();
  }
}
