/**
 * Host side of the agent protocol: `AgentClient` implements contracts' `AgentSession` over any byte
 * `Duplex` (a `runsc exec ... bridge` process's stdio, a unix socket, or a virtio-serial port's channel
 * from `openVirtioChannel`, which does that transport's handshake first). Every call
 * rejects with `RamifyError`: the agent's own code for its errors, `AGENT_UNREACHABLE` at once for
 * anything pending or new when the channel closes.
 */
import type { Duplex } from 'node:stream';
import {
  RamifyError,
  type AgentEvent,
  type AgentExit,
  type AgentIdentity,
  type AgentOutputHandlers,
  type AgentSession,
  type AgentStartOptions,
  type AgentWatchHandlers,
  type FileAttributes,
  type FileInfo,
  type NetworkEndpointReport,
  type QuiesceReport,
  type ProcessInfo,
  type PtySize,
  type StreamOffsets,
  type WatchInfo,
  type WatchOptions,
} from '@ramify/contracts';
import type { ChunkQueue } from '../protocol/chunk-queue.js';
import { StreamClosedError, type CreditGate } from '../protocol/credit.js';
import { encodeFrame, FrameDecoder } from '../protocol/framing.js';
import {
  messageTag,
  type AgentMessage,
  type ClientMessage,
  type IdentityReport,
  type MethodName,
  type ParamsOf,
  type PingResult,
  type ResultOf,
} from '../protocol/messages.js';
import { fromWireError } from '../protocol/wire-errors.js';
import { isHelloAnswered } from '../protocol/channel-hello.js';
import { download, upload, type TransferChannel } from './file-transfer.js';

/** Largest stdin payload sent in one request, in bytes. */
const STDIN_CHUNK_BYTES = 1024 * 1024;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
}

function unreachable(reason: string): RamifyError {
  return new RamifyError('AGENT_UNREACHABLE', `agent channel closed: ${reason}`);
}

export class AgentClient implements AgentSession {
  private readonly decoder = new FrameDecoder();
  private readonly pending = new Map<number, Pending>();
  private readonly subs = new Map<number, AgentOutputHandlers>();
  private readonly watchSubs = new Map<number, AgentWatchHandlers>();
  private readonly downloads = new Map<number, ChunkQueue>();
  private readonly uploads = new Map<number, CreditGate>();
  private readonly closeListeners: Array<(reason: string) => void> = [];
  private readonly eventListeners = new Set<(event: AgentEvent) => void>();
  /** Events that arrived before any listener (an agent delivers queued ones as soon as the channel opens). */
  private earlyEvents: AgentEvent[] = [];
  private readonly closedPromise: Promise<void>;
  private markClosed!: () => void;
  private nextId = 1;
  private closeReason: string | undefined;
  private closeRequested = false;
  /** What the file-transfer helpers may use of this client. */
  private readonly transfers: TransferChannel = {
    request: (method, params) => this.call(method, params),
    send: (message) => this.send(message),
    sendWhenWritable: (message) => this.sendWhenWritable(message),
    allocateId: () => this.nextId++,
    downloads: this.downloads,
    uploads: this.uploads,
  };

  /** Take over `stream` (its data events are consumed here). Use {@link connectAgent} to also ping. */
  constructor(private readonly stream: Duplex) {
    this.closedPromise = new Promise((resolve) => {
      this.markClosed = resolve;
    });
    stream.on('data', (chunk: Buffer) => this.receive(chunk));
    stream.on('end', () => this.shutdown(this.closeRequested ? 'closed by the client' : 'the agent ended the channel'));
    stream.on('close', () => this.shutdown('channel closed'));
    stream.on('error', (err: Error) => this.shutdown(`channel error: ${err.message}`));
    if (stream.destroyed) this.shutdown('channel already destroyed');
    stream.resume(); // A stream handed over paused (openVirtioChannel) would otherwise never flow.
  }

  get closed(): boolean {
    return this.closeReason !== undefined;
  }

  onClose(listener: (reason: string) => void): void {
    if (this.closeReason !== undefined) {
      const reason = this.closeReason;
      queueMicrotask(() => listener(reason));
    } else this.closeListeners.push(listener);
  }

  /** See `AgentSession.onEvent`; the first listener also gets the events that arrived before it (at most 64). */
  onEvent(listener: (event: AgentEvent) => void): () => void {
    this.eventListeners.add(listener);
    const early = this.earlyEvents.splice(0);
    if (early.length > 0) queueMicrotask(() => early.forEach((event) => guard(() => listener(event))));
    return () => this.eventListeners.delete(listener);
  }

  async ping(): Promise<void> {
    await this.call('ping', {});
  }

  /** Protocol version, Node version and pid of the agent. */
  agentInfo(): Promise<PingResult> {
    return this.call('ping', {});
  }

  async setIdentity(identity: AgentIdentity): Promise<void> {
    await this.applyIdentity(identity);
  }

  /** Like {@link setIdentity}, returning what the agent could and could not apply. */
  applyIdentity(identity: AgentIdentity): Promise<IdentityReport> {
    return this.call('setIdentity', identity);
  }

  async start(options: AgentStartOptions, handlers: AgentOutputHandlers): Promise<{ pid: number }> {
    const sub = this.nextId++;
    this.subs.set(sub, handlers);
    try {
      return await this.call('start', { ...options, sub });
    } catch (err) {
      this.subs.delete(sub);
      throw err;
    }
  }

  async attach(pid: number, from: StreamOffsets, handlers: AgentOutputHandlers): Promise<{ from: StreamOffsets; detach: () => void }> {
    const sub = this.nextId++;
    this.subs.set(sub, handlers);
    let result: ResultOf<'attach'>;
    try {
      result = await this.call('attach', { pid, from, sub });
    } catch (err) {
      this.subs.delete(sub);
      throw err;
    }
    const detach = (): void => {
      if (!this.subs.delete(sub) || this.closed) return;
      this.call('detach', { sub }).catch(() => undefined);
    };
    return { from: result.from, detach };
  }

  wait(pid: number): Promise<AgentExit> {
    return this.call('wait', { pid });
  }

  async sendStdin(pid: number, data: Uint8Array): Promise<void> {
    if (data.byteLength === 0) return;
    for (let off = 0; off < data.byteLength; off += STDIN_CHUNK_BYTES) {
      await this.call('stdin', { pid, data: data.subarray(off, off + STDIN_CHUNK_BYTES) });
    }
  }

  async closeStdin(pid: number): Promise<void> {
    await this.call('closeStdin', { pid });
  }

  async signal(pid: number, signal: NodeJS.Signals): Promise<void> {
    await this.call('signal', { pid, signal });
  }

  async resize(pid: number, size: PtySize): Promise<void> {
    await this.call('resize', { pid, cols: size.cols, rows: size.rows });
  }

  listProcesses(): Promise<ProcessInfo[]> {
    return this.call('listProcesses', {});
  }

  async watch(options: WatchOptions, handlers: AgentWatchHandlers): Promise<WatchInfo & { detach: () => void }> {
    const sub = this.nextId++;
    this.watchSubs.set(sub, handlers);
    try {
      const info = await this.call('watch', { path: options.path, recursive: options.recursive === true, sub });
      return { ...info, detach: this.watchDetacher(sub) };
    } catch (err) {
      this.watchSubs.delete(sub);
      throw err;
    }
  }

  async attachWatch(watchId: string, from: number, handlers: AgentWatchHandlers): Promise<{ from: number; path: string; recursive: boolean; detach: () => void }> {
    const sub = this.nextId++;
    this.watchSubs.set(sub, handlers);
    try {
      const result = await this.call('watchAttach', { watchId, from, sub });
      return { from: result.from, path: result.path, recursive: result.recursive, detach: this.watchDetacher(sub) };
    } catch (err) {
      this.watchSubs.delete(sub);
      throw err;
    }
  }

  async stopWatch(watchId: string): Promise<void> {
    await this.call('watchStop', { watchId });
  }

  private watchDetacher(sub: number): () => void {
    return () => {
      if (!this.watchSubs.delete(sub) || this.closed) return;
      this.call('detach', { sub }).catch(() => undefined);
    };
  }

  readFile(path: string): AsyncIterable<Uint8Array> {
    return download(this.transfers, path);
  }

  writeFile(path: string, data: AsyncIterable<Uint8Array>, options: { mode?: number } = {}): Promise<FileInfo> {
    return upload(this.transfers, path, data, options.mode);
  }

  listDir(path: string, depth?: number): Promise<FileInfo[]> {
    return this.call('listDir', { path, depth });
  }

  stat(path: string): Promise<FileInfo> {
    return this.call('stat', { path });
  }

  mkdir(path: string): Promise<FileInfo> {
    return this.call('mkdir', { path });
  }

  async remove(path: string): Promise<void> {
    await this.call('remove', { path });
  }

  rename(from: string, to: string): Promise<FileInfo> {
    return this.call('rename', { from, to });
  }

  setAttributes(path: string, attributes: FileAttributes): Promise<FileInfo> {
    return this.call('setAttributes', { ...attributes, path });
  }

  async readLink(path: string): Promise<string> {
    return (await this.call('readLink', { path })).target;
  }

  symlink(target: string, path: string): Promise<FileInfo> {
    return this.call('symlink', { target, path });
  }

  networkEndpoints(): Promise<NetworkEndpointReport> {
    return this.call('networkEndpoints', {});
  }

  quiesceNetwork(): Promise<QuiesceReport> {
    return this.call('quiesceNetwork', {});
  }

  /**
   * End the channel and wait until it has closed (the bridge process exited), destroying it if the
   * other side has not finished within `graceMs` (default 5000). Pending calls reject AGENT_UNREACHABLE.
   */
  async close(graceMs = 5000): Promise<void> {
    if (!this.closed) {
      this.closeRequested = true;
      this.stream.end();
      const timer = setTimeout(() => this.stream.destroy(), graceMs);
      await this.closedPromise;
      clearTimeout(timer);
    }
  }

  /** Send a request and resolve with its typed result. */
  private call<M extends MethodName>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
    if (this.closeReason !== undefined) return Promise.reject(unreachable(this.closeReason));
    const id = this.nextId++;
    return new Promise<ResultOf<M>>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.send({ t: 'req', id, m: method, p: params });
    });
  }

  private send(message: ClientMessage): boolean {
    if (this.closed || this.stream.destroyed || this.stream.writableEnded) return false;
    return this.stream.write(encodeFrame(message));
  }

  private async sendWhenWritable(message: ClientMessage): Promise<void> {
    if (this.send(message)) return;
    if (this.closed) throw new StreamClosedError(this.closeReason ?? 'closed');
    await new Promise<void>((resolve) => {
      const done = (): void => {
        this.stream.off('drain', done);
        this.stream.off('close', done);
        resolve();
      };
      this.stream.on('drain', done);
      this.stream.on('close', done);
    });
  }

  private receive(chunk: Buffer): void {
    let messages: unknown[];
    try {
      messages = this.decoder.push(chunk);
    } catch (err) {
      this.stream.destroy();
      this.shutdown(`protocol error: ${(err as Error).message}`);
      return;
    }
    for (const msg of messages) this.dispatch(msg as AgentMessage);
  }

  private dispatch(msg: AgentMessage): void {
    switch (messageTag(msg)) {
      case 'res': {
        if (msg.t !== 'res') return;
        const p = this.pending.get(msg.id);
        if (!p) return;
        this.pending.delete(msg.id);
        if (msg.e) p.reject(fromWireError(msg.e));
        else p.resolve(msg.r);
        return;
      }
      case 'out': {
        if (msg.t !== 'out') return;
        const h = this.subs.get(msg.sub);
        guard(() => (msg.fd === 1 ? h?.onStdout?.(msg.data) : h?.onStderr?.(msg.data)));
        return;
      }
      case 'exit': {
        if (msg.t !== 'exit') return;
        const h = this.subs.get(msg.sub);
        this.subs.delete(msg.sub);
        guard(() => h?.onExit?.(msg.exit));
        return;
      }
      case 'fsev':
        if (msg.t === 'fsev') guard(() => this.watchSubs.get(msg.sub)?.onEvents?.(msg.events));
        return;
      case 'fsend': {
        if (msg.t !== 'fsend') return;
        const h = this.watchSubs.get(msg.sub);
        this.watchSubs.delete(msg.sub);
        guard(() => h?.onEnd?.(msg.message === undefined ? { reason: msg.reason } : { reason: msg.reason, message: msg.message }));
        return;
      }
      case 'event':
        if (msg.t === 'event' && typeof msg.event === 'object' && msg.event !== null) {
          if (this.eventListeners.size === 0 && this.earlyEvents.push(msg.event) > 64) this.earlyEvents.shift();
          for (const listener of [...this.eventListeners]) guard(() => listener(msg.event));
        }
        return;
      case 'data':
        if (msg.t === 'data') this.downloads.get(msg.sid)?.push(msg.data);
        return;
      case 'end':
        if (msg.t === 'end') this.downloads.get(msg.sid)?.end(msg.e ? fromWireError(msg.e) : undefined);
        return;
      case 'credit':
        if (msg.t === 'credit') this.uploads.get(msg.sid)?.grant(msg.n);
        return;
      case 'cancel':
        if (msg.t === 'cancel') this.uploads.get(msg.sid)?.close('cancelled by the agent');
        return;
      default:
        return;
    }
  }

  private shutdown(reason: string): void {
    if (this.closeReason !== undefined) return;
    this.closeReason = reason;
    const err = unreachable(reason);
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    this.subs.clear();
    this.watchSubs.clear();
    for (const q of this.downloads.values()) q.end(err);
    this.downloads.clear();
    for (const g of this.uploads.values()) g.close(reason);
    this.uploads.clear();
    this.eventListeners.clear();
    if (!this.stream.destroyed) this.stream.destroy();
    this.markClosed();
    for (const l of this.closeListeners.splice(0)) guard(() => l(reason));
  }
}

/** Run a user callback; an exception there must not break the channel. */
function guard(fn: () => void): void {
  try {
    fn();
  } catch (err) {
    process.emitWarning(`agent output handler threw: ${(err as Error)?.stack ?? String(err)}`);
  }
}

export interface ConnectAgentOptions {
  /** Give up (and close the stream) when the first ping takes longer, in ms (default 10000). */
  pingTimeoutMs?: number;
}

/**
 * Wrap `stream` in an {@link AgentClient} and ping the agent, unless its hello was just answered
 * ({@link markHelloAnswered}: the agent is known to be up on it).
 * @throws RamifyError AGENT_UNREACHABLE when the channel closes or the ping times out.
 */
export async function connectAgent(stream: Duplex, options: ConnectAgentOptions = {}): Promise<AgentClient> {
  const client = new AgentClient(stream);
  if (isHelloAnswered(stream)) return client;
  const timeoutMs = options.pingTimeoutMs ?? 10_000;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RamifyError('AGENT_UNREACHABLE', `agent did not answer a ping within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([client.ping(), timeout]);
    return client;
  } catch (err) {
    stream.destroy();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
