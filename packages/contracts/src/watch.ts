/**
 * Watching a directory in a sandbox (E2B's `files.watchDir` shape): the event vocabulary every side
 * uses (the agent, which reads the guest kernel's inotify events; the daemon's watch stream; the SDK).
 * No zod here: the agent bundle takes this file as it is.
 *
 * A watch lives in the sandbox's agent, not in a connection: it keeps collecting events while no one
 * listens (a pause, a dropped WebSocket) and is re-attached from a sequence number. Events are numbered
 * from 1 in the order the kernel reported them.
 */

/** What happened to an entry (inotify's events, named as E2B and Go's fsnotify name them). */
export type FilesystemEventType = 'create' | 'write' | 'remove' | 'rename' | 'chmod';

/**
 * One change under a watched directory:
 * - `create`: an entry appeared (created, or moved in: the new name of a rename is a `create`);
 * - `write`: a file's contents were written (each write; a burst of writes gives a burst of events);
 * - `remove`: an entry was deleted;
 * - `rename`: an entry was moved away (its old name; its new name follows as `create` when it stays
 *   under the watched directory);
 * - `chmod`: metadata changed (mode, owner, timestamps: `touch` of an existing file is a `chmod`).
 */
export interface FilesystemEvent {
  type: FilesystemEventType;
  /** Path relative to the watched directory (`sub/file.txt`); `''` for the watched directory itself. */
  name: string;
  /** Absolute path in the sandbox. */
  path: string;
  /** The entry is a directory. */
  isDir: boolean;
}

/**
 * Events may be missing at this point of the stream: `buffer` (the agent kept at most
 * {@link WATCH_BUFFER_EVENTS} events for a listener that was away or slow, and dropped older ones),
 * `kernel` (the guest kernel's inotify queue overflowed), `rewatched` (the watch was gone, e.g. the
 * sandbox's agent restarted, and the SDK started a new one on the same directory).
 */
export type WatchGapReason = 'buffer' | 'kernel' | 'rewatched';

/** Why a watch ended: `stopped` (asked to), `removed` (the watched directory was deleted or moved), `failed` (the watcher died), `expired` (nobody listened for {@link WATCH_ORPHAN_MS}). */
export type WatchEndReason = 'stopped' | 'removed' | 'failed' | 'expired';

/** An event as it travels (agent → daemon → SDK): numbered, or a gap marker. */
export type WatchWireEvent = (FilesystemEvent & { seq: number }) | { type: 'overflow'; seq: number; reason: WatchGapReason };

/** Events the agent keeps per watch for listeners that are away or behind. */
export const WATCH_BUFFER_EVENTS = 10_000;

/**
 * A watch nobody listened to for this long (counted while the agent runs; time paused does not count) is
 * stopped by the agent, ms.
 */
export const WATCH_ORPHAN_MS = 60_000;

/** What to watch. */
export interface WatchOptions {
  /** Absolute (or relative to `/root`) path of an existing directory. */
  path: string;
  /** Also watch every subdirectory, present and future (default false: direct entries only). */
  recursive?: boolean;
}

/** A started watch: its id (to re-attach and stop) and the sequence number its first event will carry. */
export interface WatchInfo {
  watchId: string;
  /** Absolute path watched. */
  path: string;
  recursive: boolean;
  nextSeq: number;
}

/**
 * Text frames of the watch WebSocket (`/v1/sandboxes/{id}/files/watch`, and `/files/watch/{watchId}` to
 * re-attach). Server: `watching` first (the watch's id, and `from`, the sequence number of the first
 * event to come), then `events` in order, then `end` and close 1000 when the watch ended. When the
 * sandbox's agent channel closes under the stream (a pause) the socket closes with 1001 and no `end`:
 * the watch goes on in the sandbox; re-attach with `?from=` the last `seq` received + 1. A failure before
 * `watching` is `error` then close 1008/1011. Client: `stop` ends the watch (answered by `end`).
 */
export type WatchControl =
  | { type: 'watching'; watchId: string; path: string; recursive: boolean; from: number }
  | { type: 'events'; events: WatchWireEvent[] }
  | { type: 'end'; reason: WatchEndReason; message?: string }
  | { type: 'stop' }
  | { type: 'error'; code: string; message: string };
