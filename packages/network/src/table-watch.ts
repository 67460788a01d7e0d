/**
 * The watchdog shared by the host tables (the egress table and its route guard, the ingress table): run
 * `ensure` (re-install what is gone; resolves true when it did) whenever the kernel reports a deletion,
 * and on a slow timer as a safety net. One run at a time; a trigger during a run runs it once more after.
 *
 * Deletions come from two long-lived monitors, shared by every watch in the process: `nft monitor`
 * (lines `delete table|chain|rule ...`; a `nft flush ruleset` prints one `delete table` per table) and
 * `ip monitor rule` (lines `Deleted ...`). Polling alone (`nft list` and `ip rule list` every 2 s, as
 * before) forked the daemon 1.5 times a second, about 1.7% of a core with the daemon idle plus the
 * copy-on-write faults after each fork (docs/design/INGRESS.md, "Session 11 profile"). While a monitor is
 * not running (it failed to start, or exited and waits to be restarted) the timer falls back to
 * `intervalMs`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { createInterface } from 'node:readline';

export interface TableWatchOptions {
  /** Poll interval while a monitor is down, ms; default 2000. */
  intervalMs?: number;
  /** Poll interval while both monitors run (the safety net), ms; default 30000. */
  safetyIntervalMs?: number;
  /** Called after `ensure` re-installed the table. */
  onReinstall?: () => void;
  onError?: (err: unknown) => void;
}

/** A deletion line of `nft monitor` or `ip monitor rule`: what may have removed something of ours. */
export function isDeletionEvent(line: string): boolean {
  return /^delete (table|chain|rule|set|map|flowtable)\b/.test(line) || /^Deleted\b/.test(line) || /^flush\b/.test(line);
}

/** The process-wide kernel monitors, started with the first watch and stopped with the last. */
class HostTableEvents extends EventEmitter {
  private readonly monitors = new Map<string, ChildProcess | null>();
  private users = 0;
  private readonly restarts = new Map<string, NodeJS.Timeout>();

  constructor(private readonly commands: Record<string, string[]>) {
    super();
    this.setMaxListeners(0);
  }

  /** True while every monitor runs (deletions are reported as they happen). */
  get live(): boolean {
    return this.monitors.size === Object.keys(this.commands).length && [...this.monitors.values()].every((m) => m !== null);
  }

  acquire(): void {
    if (this.users++ === 0) for (const name of Object.keys(this.commands)) this.start(name);
  }

  release(): void {
    if (--this.users > 0) return;
    this.users = 0;
    for (const timer of this.restarts.values()) clearTimeout(timer);
    this.restarts.clear();
    for (const child of this.monitors.values()) child?.kill();
    this.monitors.clear();
  }

  private start(name: string): void {
    const [cmd, ...args] = this.commands[name] as string[];
    const child = spawn(cmd as string, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    this.monitors.set(name, child);
    child.unref();
    (child.stdout as NodeJS.ReadableStream & { unref?: () => void }).unref?.();
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (isDeletionEvent(line.trim())) this.emit('deletion');
    });
    const down = (): void => {
      if (this.monitors.get(name) !== child) return;
      this.monitors.set(name, null);
      this.emit('deletion'); // Whatever happened while it was down is checked now.
      if (this.users === 0) return;
      const timer = setTimeout(() => {
        this.restarts.delete(name);
        if (this.users > 0) this.start(name);
      }, 1000);
      timer.unref();
      this.restarts.set(name, timer);
    };
    child.on('error', down);
    child.on('exit', down);
  }
}

const events = new HostTableEvents({ nft: ['nft', 'monitor'], rules: ['ip', 'monitor', 'rule'] });

/**
 * Watch with `ensure` until the returned function is called (see the module comment).
 * @returns the function that stops this watch (the monitors stop with the last watch).
 */
export function watchTable(ensure: () => Promise<boolean>, options: TableWatchOptions = {}): () => void {
  let busy = false;
  let again = false;
  let stopped = false;
  const check = (): void => {
    if (stopped) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    ensure()
      .then((reinstalled) => reinstalled && options.onReinstall?.())
      .catch((err: unknown) => options.onError?.(err))
      .finally(() => {
        busy = false;
        if (again) {
          again = false;
          check();
        }
      });
  };
  const fallbackMs = options.intervalMs ?? 2000;
  const safetyMs = Math.max(fallbackMs, options.safetyIntervalMs ?? 30_000);
  let last = Date.now();
  // Ticks at the fallback rate; checks at the safety rate while the monitors report deletions live.
  const timer = setInterval(() => {
    if (events.live && Date.now() - last < safetyMs) return;
    last = Date.now();
    check();
  }, fallbackMs);
  timer.unref();
  events.on('deletion', check);
  events.acquire();
  return () => {
    if (stopped) return;
    stopped = true;
    clearInterval(timer);
    events.off('deletion', check);
    events.release();
  };
}
