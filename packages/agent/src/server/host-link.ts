/**
 * The agent's side of one opened virtio-serial port: the byte stream carries a succession of host
 * connections, each opened by a HELLO (see `protocol/virtio-handshake.ts`). For each one the link
 * answers ACK and hands a fresh per-connection `Duplex` to `startSession` (the server wraps it in an
 * `AgentConnection`, exactly like a socket connection), so framing state never leaks from one host
 * connection into the next:
 *  - inbound, the link follows frame boundaries (it reads only the 4-byte lengths) and passes whole
 *    frames to the current session; bytes before a HELLO are dropped; a HELLO with a new nonce at a frame
 *    boundary ends the session and starts another; a frame that stops arriving midway for `stallMs` (a
 *    host that died mid-write, or a frame cut by a snapshot) is dropped and the link hunts for a HELLO;
 *  - outbound, a session passes only whole frames to the port, one write each; when a session ends,
 *    frames it had not yet handed over are dropped, and what it had handed over goes out before the next
 *    ACK, where the host discards it (it skips everything before the ACK carrying its own nonce).
 * The link ends when the port ends (EOF: the host disconnected) or closes; the caller reopens the port.
 * An EOF can be stale (see `continueCharDeviceStream`): `onPortEnd` may then hand back a stream that
 * goes on reading the same port, and the current session carries on as if nothing happened.
 */
import { performance } from 'node:perf_hooks';
import { Duplex } from 'node:stream';
import { MAX_FRAME_BYTES } from '../protocol/framing.js';
import { encodeMarker, MARKER_BYTES, MARKER_LENGTH_FIELD, MarkerScanner, parseMarker } from '../protocol/virtio-handshake.js';

/** How long a started frame may stop arriving before it is dropped, by default (ms). */
export const DEFAULT_FRAME_STALL_MS = 5000;

/** Frames a session may queue ahead of the port (bytes) before `writableNeedDrain`. */
const SESSION_WRITE_BUFFER_BYTES = 1024 * 1024;

const HEADER_BYTES = 4;

/** The stream that goes on reading a port after an EOF, and bytes already read from it. */
export interface ContinuedPort {
  port: Duplex;
  initial?: Buffer;
}

export interface HostLinkOptions {
  /** Receives each host connection's byte stream (once its HELLO arrived; the ACK is already queued). */
  startSession: (channel: Duplex) => void;
  /** Drop a frame that stopped arriving midway for this long (ms); default {@link DEFAULT_FRAME_STALL_MS}. */
  stallMs?: number;
  log: (line: string) => void;
  /**
   * Called when the port reads EOF. Resolve with a stream that goes on reading the same port (and any
   * bytes already read from it) when the host is still, or again, there; resolve undefined when it is
   * gone, which ends the link as without this hook.
   */
  onPortEnd?: (port: Duplex) => Promise<ContinuedPort | undefined>;
}

interface Session {
  nonce: Buffer;
  channel: Duplex;
}

/** A per-connection stream: reads are pushed by the link, each write goes to the port as one write. */
function sessionChannel(currentPort: () => Duplex): Duplex {
  return new Duplex({
    writableHighWaterMark: SESSION_WRITE_BUFFER_BYTES,
    read() {
      // Data is pushed by the link as it arrives.
    },
    write(chunk: Buffer, _encoding, callback) {
      const port = currentPort();
      if (port.destroyed) callback(new Error('port closed'));
      else port.write(chunk, (err) => callback(err ?? undefined));
    },
    final(callback) {
      callback();
    },
  });
}

export class HostLink {
  /** Resolves once the port has ended or closed and the current session is gone. */
  readonly closed: Promise<void>;
  private markClosed!: () => void;
  private readonly stallMs: number;
  private session: Session | undefined;
  private scanner = new MarkerScanner('hello');
  /** Body bytes of the current frame still to pass on. */
  private remaining = 0;
  /** A frame header (4 bytes) or marker (16 bytes) being collected at a frame boundary. */
  private readonly head = Buffer.alloc(MARKER_BYTES);
  private headLength = 0;
  private lastInboundAt = 0;
  private stallTimer: NodeJS.Timeout | undefined;
  private ended = false;
  private port: Duplex;
  /** Waiting for `onPortEnd` after an EOF. */
  private continuing = false;
  private detachPort: () => void = () => undefined;

  /** Take over `port` (its data events are consumed here). `initial`: bytes already read from it. */
  constructor(port: Duplex, private readonly options: HostLinkOptions, initial?: Buffer) {
    this.stallMs = options.stallMs ?? DEFAULT_FRAME_STALL_MS;
    this.closed = new Promise((resolve) => {
      this.markClosed = resolve;
    });
    this.port = port;
    this.attach(port, initial);
  }

  /** Consume `port` from now on; `initial`: bytes already read from it. */
  private attach(port: Duplex, initial?: Buffer): void {
    if (initial?.byteLength) this.receive(initial);
    const current = (): boolean => port === this.port && !this.continuing;
    const onData = (chunk: Buffer): void => this.receive(chunk);
    const onEnd = (): void => this.portEnded(port);
    const onError = (err: Error): void => {
      if (current()) this.shutdown(`port error: ${err.message}`);
    };
    const onClose = (): void => {
      if (current()) this.shutdown('the port closed');
    };
    port.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
    this.detachPort = () => {
      port.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      port.on('error', () => undefined);
    };
  }

  /** EOF on `port`: ask `onPortEnd` whether the port goes on; otherwise the host is gone. */
  private portEnded(port: Duplex): void {
    if (this.ended || port !== this.port || this.continuing) return;
    const onPortEnd = this.options.onPortEnd;
    if (!onPortEnd) return this.shutdown('the host disconnected');
    this.continuing = true;
    onPortEnd(port).then(
      (next) => {
        this.continuing = false;
        if (!next) return this.shutdown('the host disconnected');
        if (this.ended) {
          next.port.destroy();
          return;
        }
        this.detachPort();
        this.port = next.port;
        this.attach(next.port, next.initial);
      },
      (err: Error) => {
        this.continuing = false;
        this.shutdown(`the port ended and could not go on: ${err.message}`);
      },
    );
  }

  /** Whether a host connection is being served now. */
  get connected(): boolean {
    return this.session !== undefined;
  }

  /** End the current session and close the port. */
  close(): void {
    this.shutdown('closing');
  }

  private receive(chunk: Buffer): void {
    if (this.ended) return;
    this.lastInboundAt = performance.now();
    let rest = chunk;
    while (rest.byteLength > 0 && !this.ended) {
      if (this.session) {
        rest = this.passFrames(rest);
        continue;
      }
      const found = this.scanner.push(rest);
      if (!found) break;
      this.begin(found.nonce);
      rest = found.rest;
    }
    this.armStallTimer();
  }

  /** Pass `chunk` on frame by frame. @returns bytes left over when the session ended midway. */
  private passFrames(chunk: Buffer): Buffer {
    let i = 0;
    while (i < chunk.byteLength) {
      const session = this.session;
      if (!session) return chunk.subarray(i);
      if (this.remaining > 0) {
        const n = Math.min(this.remaining, chunk.byteLength - i);
        session.channel.push(chunk.subarray(i, i + n));
        this.remaining -= n;
        i += n;
        continue;
      }
      const want = this.headLength >= HEADER_BYTES && this.head.readUInt32BE(0) === MARKER_LENGTH_FIELD ? MARKER_BYTES : HEADER_BYTES;
      const n = Math.min(want - this.headLength, chunk.byteLength - i);
      chunk.copy(this.head, this.headLength, i, i + n);
      this.headLength += n;
      i += n;
      if (this.headLength < want) continue;
      const length = this.head.readUInt32BE(0);
      if (length === MARKER_LENGTH_FIELD) {
        if (this.headLength < MARKER_BYTES) continue; // Collect the rest of the marker.
        const marker = parseMarker(this.head);
        this.headLength = 0;
        if (marker?.kind !== 'hello') {
          this.dropSession('unexpected marker from the host');
          return chunk.subarray(i);
        }
        if (!marker.nonce.equals(session.nonce)) this.begin(marker.nonce);
        continue; // The same nonce again: the host repeated its HELLO before our ACK reached it.
      }
      if (length > MAX_FRAME_BYTES) {
        this.dropSession(`host sent a frame of ${length} bytes (limit ${MAX_FRAME_BYTES})`);
        return chunk.subarray(i);
      }
      session.channel.push(Buffer.from(this.head.subarray(0, HEADER_BYTES)));
      this.headLength = 0;
      this.remaining = length;
    }
    return Buffer.alloc(0);
  }

  /** A HELLO with a new nonce: end the current session, queue the ACK, start a fresh session. */
  private begin(nonce: Buffer): void {
    this.options.log(this.session ? 'virtio: a new host connection replaces the current one' : 'virtio: host connected');
    this.endSession();
    this.port.write(encodeMarker('ack', nonce));
    const channel = sessionChannel(() => this.port);
    const session: Session = { nonce, channel };
    this.session = session;
    channel.on('error', () => undefined);
    channel.once('close', () => {
      // The connection gave up on its own (e.g. an undecodable frame): hunt for the next HELLO.
      if (this.session === session) this.dropSession('the connection closed itself');
    });
    this.options.startSession(channel);
  }

  /** End the session after a protocol problem and hunt for the next HELLO. */
  private dropSession(reason: string): void {
    if (this.session) this.options.log(`virtio: dropping the host connection: ${reason}`);
    this.endSession();
  }

  private endSession(): void {
    const session = this.session;
    this.session = undefined;
    this.remaining = 0;
    this.headLength = 0;
    this.scanner = new MarkerScanner('hello');
    if (session && !session.channel.destroyed) session.channel.destroy();
  }

  private get midFrame(): boolean {
    return this.session !== undefined && (this.remaining > 0 || this.headLength > 0);
  }

  /** While a frame is incomplete, check that its bytes keep coming. */
  private armStallTimer(): void {
    if (this.stallTimer || !this.midFrame || this.ended) return;
    const check = (): void => {
      this.stallTimer = undefined;
      if (!this.midFrame || this.ended) return;
      const idle = performance.now() - this.lastInboundAt;
      if (idle < this.stallMs) {
        this.stallTimer = setTimeout(check, this.stallMs - idle);
        return;
      }
      // Let pending reads run first (timers fire before I/O in an event loop turn).
      setImmediate(() => {
        if (this.midFrame && !this.ended && performance.now() - this.lastInboundAt >= this.stallMs) {
          this.dropSession(`a frame stopped arriving for ${this.stallMs} ms`);
        } else this.armStallTimer();
      });
    };
    this.stallTimer = setTimeout(check, this.stallMs);
  }

  private shutdown(reason: string): void {
    if (this.ended) return;
    this.ended = true;
    if (this.stallTimer) clearTimeout(this.stallTimer);
    if (this.session) this.options.log(`virtio: host connection ended: ${reason}`);
    this.endSession();
    this.port.destroy();
    this.markClosed();
  }
}
