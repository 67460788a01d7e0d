/**
 * The host's view of the agent that runs inside every sandbox. The wire protocol (length-prefixed
 * msgpack frames over one byte stream the runtime provides) is implemented by `@ramify/agent`
 * (`AgentClient` on the host, the agent's server inside the sandbox). Everything here is
 * runtime-independent: gVisor carries the stream over a `runsc exec` bridge's stdio, QEMU over a
 * virtio-serial port.
 */
import type { FileInfo, ProcessInfo } from './api.js';
import type { PtySize } from './pty.js';
import type { WatchEndReason, WatchInfo, WatchOptions, WatchWireEvent } from './watch.js';

export interface AgentStartOptions {
  /** Run by `/bin/bash -c` in its own process group. */
  cmd: string;
  /** Must exist; otherwise the start fails with `CWD_NOT_FOUND`. Default `/root`. */
  cwd?: string;
  /** Merged over the sandbox envs given to {@link AgentSession.setIdentity}. */
  envs?: Record<string, string>;
  /** Kill the whole process tree (SIGKILL to the group and every descendant) at this deadline; 0/absent = none. */
  timeoutMs?: number;
  /** Keep stdin open for {@link AgentSession.sendStdin}; default false: stdin is closed at once. */
  stdin?: boolean;
  user?: string;
  /**
   * Start it on a pseudo-terminal of this size instead of pipes: its stdin, stdout and stderr are the
   * terminal, all output arrives as stdout (fd 1), input goes through `sendStdin`, and `resize` changes
   * the size (the program gets SIGWINCH). `TERM` defaults to `xterm-256color` and `LANG` to `C.UTF-8`.
   */
  pty?: PtySize;
}


export interface AgentOutputHandlers {
  onStdout?: (chunk: Uint8Array) => void;
  onStderr?: (chunk: Uint8Array) => void;
  /** Called once when the process has exited and all its output has been delivered. */
  onExit?: (exit: AgentExit) => void;
}

export interface AgentExit {
  exitCode: number | null;
  signal: string | null;
  /** Why the agent or the kernel ended it, when one did: see {@link AgentExitError}. */
  error: AgentExitError | null;
}

/**
 * Why a process ended other than on its own:
 * - `timeout`: its deadline killed the whole process tree;
 * - `oom`: it, or a process of its tree, was killed because the sandbox ran out of memory (by the agent's
 *   OOM guard under gVisor, by the guest kernel's OOM killer in a microVM). The exit code or signal is
 *   the process's own: `SIGKILL` when it was the one killed, else whatever it made of its child's death.
 */
export type AgentExitError = 'timeout' | 'oom';

/**
 * A process was killed because the sandbox ran out of memory. Pushed by the agent to every open
 * connection (queued while none is open, and delivered to the next one).
 */
export interface OomKillEvent {
  type: 'oom';
  /**
   * The sandbox the agent served when it happened. An event still queued at a checkpoint travels in the
   * image, so a fork's first connection may deliver its parent's: the host keeps only events naming the
   * sandbox it is connected to. Null before the first identity (a template build's boot).
   */
  sandboxId: string | null;
  /** When, ms since the epoch (the sandbox's clock). */
  at: number;
  /** The process killed. */
  pid: number;
  /** Its command line (at most 256 characters; the kernel's report gives only the name). */
  cmd: string;
  /** The command started through the agent whose process tree it was in (its pid); null for any other process. */
  commandPid: number | null;
  /** `agent`: the agent's OOM guard (gVisor has no OOM killer); `kernel`: the guest kernel's OOM killer. */
  killer: 'agent' | 'kernel';
  /** Its resident memory when it was killed, bytes. */
  rssBytes: number | null;
  /**
   * Memory in use in the sandbox when it was killed and the sandbox's limit (`MemTotal`), bytes; null when
   * not known (the kernel's report does not say what was in use).
   */
  usedBytes: number | null;
  limitBytes: number | null;
}

/** What the agent pushes unasked (today only {@link OomKillEvent}). */
export type AgentEvent = OomKillEvent;

/** Where a watch's events go (see `watch.ts`). */
export interface AgentWatchHandlers {
  /** Events in order, each numbered (`seq`); a gap marker (`type: 'overflow'`) says where some are missing. */
  onEvents?: (events: WatchWireEvent[]) => void;
  /** Called once when the watch ends (then nothing more arrives); `message` says more for `failed`. */
  onEnd?: (end: { reason: WatchEndReason; message?: string }) => void;
}

/** Attributes {@link AgentSession.setAttributes} changes; absent ones are left as they are. */
export interface FileAttributes {
  /** Permission bits, 0 to 0o7777. */
  mode?: number;
  /** Access and modification times, ms since the epoch; both or neither. */
  atimeMs?: number;
  mtimeMs?: number;
  /** New size, bytes (truncate or extend with zeros). */
  size?: number;
}

/** Byte offsets into a process's stdout/stderr, as counted from its first byte. */
export interface StreamOffsets {
  stdout: number;
  stderr: number;
}

/** Identity applied after every boot and restore (fresh for every fork). */
export interface AgentIdentity {
  sandboxId: string;
  hostname: string;
  /** Default environment of every command in this sandbox. */
  envs: Record<string, string>;
  /** Host wall clock, ms since epoch, at the moment of sending. */
  clockMs: number;
  /** Fresh host entropy mixed into the guest's pool (32+ bytes). */
  entropy: Uint8Array;
  /**
   * Size of the root disk the runtime gave the sandbox, bytes (microVMs: it may have grown it beyond its
   * image's). The agent waits until the kernel sees it and grows the root filesystem to fill it;
   * absent for runtimes without a disk of their own.
   */
  rootDiskBytes?: number;
  /**
   * The sandbox's metadata (its create request's `metadata`), which the agent writes to
   * `/run/ramify/metadata.json` before answering. Absent: the file is left as it is.
   */
  metadata?: Record<string, string>;
}

/** Connected TCP endpoints on a non-loopback address (each one blocks a gVisor checkpoint). */
export interface NetworkEndpointReport {
  /** e.g. `10.254.0.2:41234 -> 93.184.216.34:443 ESTABLISHED` */
  endpoints: string[];
}

/** What {@link AgentSession.quiesceNetwork} found. */
export interface QuiesceReport {
  /**
   * True: no endpoint was connected, and every process but the agent is now stopped (SIGSTOP) so that
   * none can open one before the checkpoint; they continue at the agent's next host connection.
   */
  frozen: boolean;
  /** The endpoints connected (empty when `frozen`), as in {@link NetworkEndpointReport}. */
  endpoints: string[];
}

/**
 * One connection to one sandbox's agent. Methods reject with `RamifyError` (`PROCESS_NOT_FOUND`,
 * `FILE_NOT_FOUND`, `CWD_NOT_FOUND`, `AGENT_UNREACHABLE` when the channel closed, ...).
 */
export interface AgentSession {
  /** Round trip; resolves when the agent answered. */
  ping(): Promise<void>;
  setIdentity(identity: AgentIdentity): Promise<void>;
  /** Start a process; `handlers` see every byte from the first. Resolves once it has a pid. */
  start(options: AgentStartOptions, handlers: AgentOutputHandlers): Promise<{ pid: number }>;
  /**
   * Subscribe to a process (running or exited and still remembered): replays what the agent's bounded
   * buffer still holds from `from` on, then live output, then `onExit`. Returns the offsets actually
   * replayed from (larger than `from` if the buffer already dropped those bytes) and an unsubscribe.
   */
  attach(pid: number, from: StreamOffsets, handlers: AgentOutputHandlers): Promise<{ from: StreamOffsets; detach: () => void }>;
  /** Resolves when the process exits (at once if it already has). */
  wait(pid: number): Promise<AgentExit>;
  sendStdin(pid: number, data: Uint8Array): Promise<void>;
  closeStdin(pid: number): Promise<void>;
  /** Signal the process group. */
  signal(pid: number, signal: NodeJS.Signals): Promise<void>;
  /**
   * Change the terminal size of a process started with `pty` (its foreground group gets SIGWINCH).
   * Rejects `PROCESS_NOT_FOUND`, `NOT_A_PTY`, `PROCESS_EXITED`, `PTY_SIZE_INVALID`.
   */
  resize(pid: number, size: PtySize): Promise<void>;
  listProcesses(): Promise<ProcessInfo[]>;

  /**
   * Start watching a directory; `handlers` get its events from the first. The watch belongs to the
   * agent: it outlives this channel (a checkpoint, a lost connection) until stopped, ended, or nobody
   * listened for `WATCH_ORPHAN_MS`. Resolves once the kernel's watches are in place, so every change
   * after it is reported. Rejects `FILE_NOT_FOUND`, `NOT_A_DIRECTORY`, `WATCH_UNAVAILABLE`.
   */
  watch(options: WatchOptions, handlers: AgentWatchHandlers): Promise<WatchInfo & { detach: () => void }>;
  /**
   * Listen to a watch again from event `from` (its `seq`): replays what the agent still holds, then live
   * events. Returns the sequence number actually replayed from; when the agent no longer held `from`, the
   * replay starts with a gap marker. Rejects `WATCH_NOT_FOUND`.
   */
  attachWatch(watchId: string, from: number, handlers: AgentWatchHandlers): Promise<{ from: number; path: string; recursive: boolean; detach: () => void }>;
  /** Stop a watch (its listeners get `onEnd` `stopped`). Rejects `WATCH_NOT_FOUND`. */
  stopWatch(watchId: string): Promise<void>;

  /** Stream a file's exact bytes. Rejects `FILE_NOT_FOUND` / `IS_A_DIRECTORY`. */
  readFile(path: string): AsyncIterable<Uint8Array>;
  /** Write a file from a byte stream (parent directories created), replacing it atomically. */
  writeFile(path: string, data: AsyncIterable<Uint8Array>, options?: { mode?: number }): Promise<FileInfo>;
  listDir(path: string, depth?: number): Promise<FileInfo[]>;
  stat(path: string): Promise<FileInfo>;
  mkdir(path: string): Promise<FileInfo>;
  /** Recursive. */
  remove(path: string): Promise<void>;
  rename(from: string, to: string): Promise<FileInfo>;
  /**
   * Change what `attributes` gives of a path (symlinks followed): permission bits (chmod), access and
   * modification times (utimes; both or neither), size (truncate). Agents older than this method reject
   * `BAD_REQUEST`. Rejects `FILE_NOT_FOUND`, `FORBIDDEN`, `BAD_REQUEST` (a bad value).
   */
  setAttributes(path: string, attributes: FileAttributes): Promise<FileInfo>;
  /** The target of the symlink at `path`, as stored. Rejects `FILE_NOT_FOUND`, `BAD_REQUEST` (not a symlink). */
  readLink(path: string): Promise<string>;
  /** Make a symlink at `path` to `target` (stored as given). Rejects `FILE_EXISTS`, `FILE_NOT_FOUND` (no parent). */
  symlink(target: string, path: string): Promise<FileInfo>;

  /** Connected non-loopback TCP endpoints, read from /proc/net/tcp{,6} inside the sandbox. */
  networkEndpoints(): Promise<NetworkEndpointReport>;
  /**
   * Ready a checkpoint that a connected endpoint would break (gVisor): when none is connected, stop
   * every process but the agent and check again, so that none can connect before the checkpoint. The
   * processes continue at the agent's next host connection (after the restore, or after a checkpoint
   * that failed), or after two minutes. Agents older than this method reject `BAD_REQUEST`.
   */
  quiesceNetwork(): Promise<QuiesceReport>;

  /** Close the channel (before a checkpoint). Subscriptions end without `onExit`. */
  close(): Promise<void>;
  /** Called once when the channel closes for any reason. */
  onClose(listener: (reason: string) => void): void;
  /**
   * Called for every event the agent pushes on this channel (agents older than events push none).
   * Returns an unsubscribe.
   */
  onEvent(listener: (event: AgentEvent) => void): () => void;
  readonly closed: boolean;
}
