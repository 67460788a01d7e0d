/**
 * Reading `inotifywait` (Debian's `inotify-tools`): the arguments it runs with, and the mapping of its
 * output records to {@link FilesystemEvent}s. Pure functions, tested beside this file.
 *
 * Each record is `EVENTS\0PATH\0` (`--format '%e%0%w%f%0' --no-newline`): EVENTS is a comma-separated
 * list of inotify flags (`CREATE,ISDIR`), PATH the watched directory (with its trailing `/`) joined to
 * the entry's name. NUL never occurs in a path, so any name (newlines included) parses.
 */
import type { FilesystemEvent, FilesystemEventType } from '@ramify/contracts';

/** The inotify events asked for; CLOSE_WRITE, OPEN and ACCESS are left out (no event type of ours). */
const EVENTS = 'create,modify,attrib,moved_from,moved_to,delete,delete_self,move_self';

/** argv (after the program name) of an `inotifywait` watching `path`. */
export function inotifywaitArgs(path: string, recursive: boolean): string[] {
  return ['-m', ...(recursive ? ['-r'] : []), '-e', EVENTS, '--format', '%e%0%w%f%0', '--no-newline', '--', path];
}

/** The flag of each event type, in the order a record with several flags is reported. */
const FLAG_TYPES: ReadonlyArray<[string, FilesystemEventType]> = [
  ['CREATE', 'create'],
  ['MOVED_TO', 'create'],
  ['MODIFY', 'write'],
  ['ATTRIB', 'chmod'],
  ['MOVED_FROM', 'rename'],
  ['DELETE', 'remove'],
];

/** What one record says. `rootGone`: the watched directory itself was deleted or moved (the watch ends). */
export interface ParsedRecord {
  events: FilesystemEvent[];
  overflow: boolean;
  rootGone: boolean;
}

/**
 * Map one record of the watch of `root` (absolute, no trailing slash) to events. DELETE_SELF and
 * MOVE_SELF of a subdirectory are dropped: its parent reports the same change as DELETE or MOVED_FROM.
 */
export function parseRecord(root: string, flagsText: string, rawPath: string): ParsedRecord {
  const flags = new Set(flagsText.split(','));
  const path = rawPath.length > 1 && rawPath.endsWith('/') ? rawPath.slice(0, -1) : rawPath;
  const name = path === root ? '' : path.startsWith(`${root}/`) ? path.slice(root.length + 1) : path;
  const isDir = flags.has('ISDIR');
  const result: ParsedRecord = { events: [], overflow: flags.has('Q_OVERFLOW'), rootGone: false };
  if (path === root && (flags.has('DELETE_SELF') || flags.has('MOVE_SELF'))) {
    result.rootGone = true;
    result.events.push({ type: flags.has('DELETE_SELF') ? 'remove' : 'rename', name: '', path, isDir: true });
    return result;
  }
  for (const [flag, type] of FLAG_TYPES) if (flags.has(flag)) result.events.push({ type, name, path, isDir });
  return result;
}

/**
 * Splits `inotifywait`'s stdout into records across chunk boundaries: feed chunks, get the complete
 * `[flags, path]` pairs.
 */
export class RecordSplitter {
  #pending: Buffer = Buffer.alloc(0);
  #fields: string[] = [];

  push(chunk: Buffer): Array<[string, string]> {
    this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    const out: Array<[string, string]> = [];
    let start = 0;
    for (let nul = this.#pending.indexOf(0, start); nul >= 0; nul = this.#pending.indexOf(0, start)) {
      this.#fields.push(this.#pending.subarray(start, nul).toString('utf8'));
      start = nul + 1;
      if (this.#fields.length === 2) {
        out.push([this.#fields[0]!, this.#fields[1]!]);
        this.#fields = [];
      }
    }
    this.#pending = this.#pending.subarray(start);
    return out;
  }
}
