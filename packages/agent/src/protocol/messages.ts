/**
 * Messages of the agent protocol (each one is the msgpack body of a frame, see `framing.ts`).
 *
 * - `req` / `res`: request and response matched by a numeric `id` chosen by the client.
 * - `out` / `exit`: events pushed by the agent for a subscription `sub` (an id chosen by the client
 *   when it starts or attaches to a process). `off` is the absolute byte offset of `data` in the stream.
 * - `fsev` / `fsend`: events of a watch for a subscription `sub`, and its end.
 * - `event`: something the agent reports unasked (an OOM kill), to every open connection; clients that
 *   do not know the tag ignore it.
 * - `data` / `end` / `credit` / `cancel`: a flow-controlled byte stream `sid` (chosen by the client) used
 *   by file transfers. The receiver grants `credit` in bytes; the sender never has more than the granted
 *   bytes in flight, so neither side buffers a whole file.
 */
import type { AgentEvent, AgentExit, AgentIdentity, AgentStartOptions, FileAttributes, FileInfo, NetworkEndpointReport, ProcessInfo, PtySize, QuiesceReport, StreamOffsets, WatchEndReason, WatchInfo, WatchOptions, WatchWireEvent } from '@ramify/contracts';

/** Protocol version announced by `ping`; bumped on incompatible changes. */
export const PROTOCOL_VERSION = 1;

/** Largest `data` / `out` payload one frame carries, in bytes. */
export const MAX_DATA_CHUNK_BYTES = 256 * 1024;

/** Credit window a file-stream receiver grants up front, in bytes. */
export const STREAM_WINDOW_BYTES = 1024 * 1024;

/** Error as carried on the wire; `code` is one of contracts' `ErrorCode`s (unknown ones read as INTERNAL). */
export interface WireError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** What `setIdentity` did; failures are reported, not thrown. */
export interface IdentityReport {
  hostname: { applied: boolean; error?: string };
  clock: { adjusted: boolean; offsetMs: number; error?: string };
  entropy: { bytes: number; error?: string };
  /** Present when the metadata file could not be written. */
  metadata?: { error: string };
}

/** Answer to `ping`. */
export interface PingResult {
  protocol: number;
  /** Node version of the agent. */
  node: string;
  /** The agent's own pid inside the sandbox. */
  agentPid: number;
}

/** Every request: method name → params and result. */
export interface AgentMethods {
  ping: { params: Record<string, never>; result: PingResult };
  setIdentity: { params: AgentIdentity; result: IdentityReport };
  start: { params: AgentStartOptions & { sub: number }; result: { pid: number } };
  attach: { params: { pid: number; from: StreamOffsets; sub: number }; result: { from: StreamOffsets } };
  detach: { params: { sub: number }; result: Record<string, never> };
  wait: { params: { pid: number }; result: AgentExit };
  stdin: { params: { pid: number; data: Uint8Array }; result: Record<string, never> };
  closeStdin: { params: { pid: number }; result: Record<string, never> };
  signal: { params: { pid: number; signal: string }; result: Record<string, never> };
  /** Resize the terminal of a process started with `pty` (checked: `PTY_SIZE_INVALID`, `NOT_A_PTY`). */
  resize: { params: { pid: number } & PtySize; result: Record<string, never> };
  listProcesses: { params: Record<string, never>; result: ProcessInfo[] };
  /** Opens the file, answers with its size, then sends it on stream `sid` (initial credit `window`). */
  readFile: { params: { path: string; sid: number; window: number }; result: { size: number } };
  /** Grants credit on stream `sid`, receives the bytes, answers once the file is renamed into place. */
  writeFile: { params: { path: string; sid: number; mode?: number }; result: FileInfo };
  listDir: { params: { path: string; depth?: number }; result: FileInfo[] };
  stat: { params: { path: string }; result: FileInfo };
  mkdir: { params: { path: string }; result: FileInfo };
  remove: { params: { path: string }; result: Record<string, never> };
  rename: { params: { from: string; to: string }; result: FileInfo };
  /** Start a watch and listen to it as subscription `sub` (`fsev` / `fsend` messages). */
  watch: { params: WatchOptions & { sub: number }; result: WatchInfo };
  /** Listen to a watch again from sequence number `from`. */
  watchAttach: { params: { watchId: string; from: number; sub: number }; result: { from: number; path: string; recursive: boolean } };
  watchStop: { params: { watchId: string }; result: Record<string, never> };
  setAttributes: { params: { path: string } & FileAttributes; result: FileInfo };
  readLink: { params: { path: string }; result: { target: string } };
  symlink: { params: { target: string; path: string }; result: FileInfo };
  networkEndpoints: { params: Record<string, never>; result: NetworkEndpointReport };
  quiesceNetwork: { params: Record<string, never>; result: QuiesceReport };
}

export type MethodName = keyof AgentMethods;
export type ParamsOf<M extends MethodName> = AgentMethods[M]['params'];
export type ResultOf<M extends MethodName> = AgentMethods[M]['result'];

export interface RequestMessage { t: 'req'; id: number; m: string; p: unknown }
export interface ResponseMessage { t: 'res'; id: number; r?: unknown; e?: WireError }
/** Process output for subscription `sub`; `fd` 1 = stdout, 2 = stderr. */
export interface OutputMessage { t: 'out'; sub: number; fd: 1 | 2; off: number; data: Uint8Array }
/** The process of subscription `sub` exited and all its output was sent; the subscription ends. */
export interface ExitMessage { t: 'exit'; sub: number; exit: AgentExit }
/** An {@link AgentEvent} (e.g. a process killed for running out of memory). */
export interface EventMessage { t: 'event'; event: AgentEvent }
/** Events of the watch listened to as subscription `sub`, in order. */
export interface WatchEventsMessage { t: 'fsev'; sub: number; events: WatchWireEvent[] }
/** The watch of subscription `sub` ended; the subscription ends. */
export interface WatchEndMessage { t: 'fsend'; sub: number; reason: WatchEndReason; message?: string }
export interface StreamDataMessage { t: 'data'; sid: number; data: Uint8Array }
/** End of stream `sid`; with `e` when the sender failed (the receiver discards what it got). */
export interface StreamEndMessage { t: 'end'; sid: number; e?: WireError }
/** The receiver of stream `sid` can take `n` more bytes. */
export interface StreamCreditMessage { t: 'credit'; sid: number; n: number }
/** The receiver of stream `sid` gives up; the sender stops and cleans up. */
export interface StreamCancelMessage { t: 'cancel'; sid: number }

export type StreamMessage = StreamDataMessage | StreamEndMessage | StreamCreditMessage | StreamCancelMessage;
export type ClientMessage = RequestMessage | StreamMessage;
export type AgentMessage = ResponseMessage | OutputMessage | ExitMessage | EventMessage | WatchEventsMessage | WatchEndMessage | StreamMessage;

/** Narrow an unknown decoded value to a message with a string tag `t`. */
export function messageTag(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const t = (value as { t?: unknown }).t;
  return typeof t === 'string' ? t : undefined;
}
