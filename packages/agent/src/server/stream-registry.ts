/** Per-connection bookkeeping of open flow-controlled streams (file transfers), keyed by stream id. */
import type { AgentMessage } from '../protocol/messages.js';

/** Where a handler sends frames: one client connection. */
export interface FrameSink {
  send(message: AgentMessage): void;
  /** Resolves when the connection can take more data (immediately unless its buffer is full). */
  writable(): Promise<void>;
}

/** Callbacks for the frames of one stream. */
export interface StreamHandlers {
  onData?: (data: Uint8Array) => void;
  /** The peer ended the stream, with an error when it failed. */
  onEnd?: (error?: Error) => void;
  onCredit?: (bytes: number) => void;
  /** The peer cancelled, or the connection closed. */
  onClose?: (reason: string) => void;
}

export class StreamRegistry {
  private readonly streams = new Map<number, StreamHandlers>();

  register(sid: number, handlers: StreamHandlers): void {
    this.streams.set(sid, handlers);
  }

  get(sid: number): StreamHandlers | undefined {
    return this.streams.get(sid);
  }

  delete(sid: number): void {
    this.streams.delete(sid);
  }

  /** Close every stream (connection gone). */
  closeAll(reason: string): void {
    const all = [...this.streams.values()];
    this.streams.clear();
    for (const h of all) h.onClose?.(reason);
  }
}
