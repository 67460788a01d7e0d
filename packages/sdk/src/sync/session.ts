/**
 * `syncDir`: keep a local directory and a sandbox directory the same, both ways. A first pass
 * reconciles everything against the base kept in the state file; then chokidar watches the local side
 * and `files.watchDir` the sandbox's, and every change marks its path dirty for the next pass (run
 * {@link SYNC_DEBOUNCE_MS} after the last change, one pass at a time). When the sandbox pauses, a pass
 * fails where it stands (no base is written for what did not finish); the session waits until the
 * sandbox runs again and redoes it, and the sandbox's watch hands over what changed meanwhile.
 */
import { resolve as resolvePath } from 'node:path';
import { relative, sep } from 'node:path';
import type { FSWatcher } from 'chokidar';
import type { Sandbox } from '../sandbox.js';
import { RamifyError, isRamifyError } from '../errors.js';
import type { WatchHandle } from '../watch.js';
import { loadIgnoreRules, type KeepPath } from './ignore-rules.js';
import { ensureLocalRoot } from './local.js';
import { LocalChangedError, runPass, type PassContext, type SyncChange, type SyncProgress } from './pass.js';
import { loadState, saveState, statePath } from './state.js';
import { RemoteTree } from './remote.js';

export type { SyncChange, SyncProgress } from './pass.js';

/** Quiet time after a change before a pass runs, ms. */
export const SYNC_DEBOUNCE_MS = 40;
/** Wait after a failed pass (the sandbox running) before the next try, ms. */
const RETRY_MS = 1000;
/** Error codes after which the session waits for the sandbox to run again. */
const WAIT_CODES: ReadonlySet<string> = new Set(['INVALID_STATE', 'AGENT_UNREACHABLE', 'API_UNREACHABLE', 'REQUEST_TIMEOUT', 'SANDBOX_PAUSED']);

/** Options of {@link syncDir}. */
export interface SyncOpts {
  /** More paths to leave alone (gitignore syntax), beside `.git`, `node_modules` and `.ramifyignore`'s. */
  ignore?: readonly string[];
  /** One reconcile, then stop (no watching). */
  once?: boolean;
  /** Transfers of a pass, e.g. the first reconcile of a large tree. */
  onProgress?: (progress: SyncProgress) => void;
  /** Each change carried over, and each conflict (never silent). */
  onChange?: (change: SyncChange) => void;
  /** A pass failed and will be tried again (the session goes on). */
  onError?: (error: Error) => void;
}

/** A running sync. */
export interface SyncSession {
  /** Resolves when the first reconcile is done (rejects when it could not be). */
  readonly ready: Promise<void>;
  /** Settles when the session ends: after {@link stop}, or with the error that ended it (the sandbox killed). */
  readonly done: Promise<void>;
  /** Resolves once nothing is pending: no dirty path, no pass running. */
  idle(): Promise<void>;
  /** Stop watching; a pass under way finishes first. */
  stop(): Promise<void>;
}

/**
 * Sync `localDir` with `remoteDir` in `sbx` (both created when missing).
 * @throws RamifyError NOT_A_DIRECTORY when either is a file (nothing is changed), and the API's errors.
 */
export async function syncDir(sbx: Sandbox, localDir: string, remoteDir: string, opts: SyncOpts = {}): Promise<SyncSession> {
  const localRoot = resolvePath(localDir);
  const localProblem = await ensureLocalRoot(localRoot);
  if (localProblem) throw new RamifyError('NOT_A_DIRECTORY', `cannot sync ${localProblem} (nothing was changed)`, { path: localRoot });
  const remote = new RemoteTree(sbx, remoteDir.replace(/\/+$/, '') || '/');
  await remote.ensureRoot();
  const keep = await loadIgnoreRules(localRoot, opts.ignore ?? []);
  const file = statePath(localRoot, sbx.sandboxId, remote.root);
  const ctx: PassContext = { localRoot, remote, keep, state: await loadState(file), onProgress: opts.onProgress, onChange: opts.onChange };
  const session = new Session(sbx, ctx, { sandboxId: sbx.sandboxId, remoteDir: remote.root, file }, opts);
  await session.start(opts.once === true);
  return session;
}

class Session implements SyncSession {
  readonly ready: Promise<void>;
  readonly done: Promise<void>;
  #markReady!: (err?: Error) => void;
  #finish!: (err?: Error) => void;
  #dirty = new Set<string>();
  /** Dirty paths the sandbox's watch (or a guard) named: read in the sandbox by the next pass. */
  #remoteDirty = new Set<string>();
  #full = true;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  #local: FSWatcher | undefined;
  #remoteWatch: WatchHandle | undefined;
  #idleWaiters: Array<() => void> = [];

  constructor(private readonly sbx: Sandbox, private readonly ctx: PassContext, private readonly meta: { sandboxId: string; remoteDir: string; file: string }, private readonly opts: SyncOpts) {
    this.ready = new Promise((resolve, reject) => (this.#markReady = (err) => (err ? reject(err) : resolve())));
    this.done = new Promise((resolve, reject) => (this.#finish = (err) => (err ? reject(err) : resolve())));
    this.ready.catch(() => undefined);
    this.done.catch(() => undefined);
  }

  async start(once: boolean): Promise<void> {
    if (!once) await this.#watch();
    this.#schedule(0);
    if (once) {
      await this.ready;
      await this.stop();
    }
  }

  idle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
    await Promise.all([this.#local?.close(), this.#remoteWatch?.stop()]);
    this.#finish();
    this.#markReady(new RamifyError('CONFLICT', 'sync stopped before its first reconcile'));
    for (const wake of this.#idleWaiters.splice(0)) wake();
  }

  /** Watch both sides; changes mark paths dirty. Both watchers are in place before the first pass. */
  async #watch(): Promise<void> {
    const { watch } = await import('chokidar'); // loaded on first use: importing the SDK does not load the sync engine's dependencies
    const rel = (abs: string): string => relative(this.ctx.localRoot, abs).split(sep).join('/');
    const local = watch(this.ctx.localRoot, {
      ignoreInitial: true,
      followSymlinks: false,
      ignored: (abs: string, stats?: { isDirectory(): boolean }) => abs !== this.ctx.localRoot && !keepOrAncestorIgnored(this.ctx.keep, rel(abs), stats?.isDirectory() ?? false),
    });
    local.on('all', (_event, abs) => this.#mark(rel(abs)));
    local.on('error', () => this.#markAll());
    await new Promise<void>((resolve) => local.once('ready', () => resolve()));
    this.#local = local;
    this.#remoteWatch = await this.sbx.files.watchDir(this.ctx.remote.root, (event) => {
      if (event.name !== '' && this.ctx.keep(event.name, event.isDir)) this.#mark(event.name, 'remote');
    }, {
      recursive: true,
      onOverflow: () => this.#markAll(),
      onExit: (err) => {
        if (err && !this.#stopped) void this.#fail(err);
      },
    });
  }

  #mark(path: string, side: 'local' | 'remote' = 'local'): void {
    if (path === '' || path.startsWith('..')) return;
    this.#dirty.add(path);
    if (side === 'remote') this.#remoteDirty.add(path);
    this.#schedule(SYNC_DEBOUNCE_MS);
  }

  #markAll(): void {
    this.#full = true;
    this.#schedule(SYNC_DEBOUNCE_MS);
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#kick(), ms);
  }

  async #kick(): Promise<void> {
    if (this.#running || this.#stopped) return;
    this.#running = this.#passLoop();
    await this.#running;
    this.#running = undefined;
    if (this.#isIdle()) for (const wake of this.#idleWaiters.splice(0)) wake();
  }

  #isIdle(): boolean {
    return this.#stopped || (!this.#running && !this.#full && this.#dirty.size === 0);
  }

  /** Passes until nothing is dirty; a failed one is redone once the sandbox runs (or after a pause of its own). */
  async #passLoop(): Promise<void> {
    while (!this.#stopped && (this.#full || this.#dirty.size > 0)) {
      const full = this.#full;
      const scope = new Set(this.#dirty);
      const remoteChanged = new Set(this.#remoteDirty);
      this.#full = false;
      this.#dirty.clear();
      this.#remoteDirty.clear();
      try {
        const again = await runPass(this.ctx, full ? 'all' : scope, remoteChanged);
        await saveState(this.meta.file, this.meta, this.ctx.state);
        for (const p of again) this.#mark(p, 'remote');
        if (full) this.#markReady();
        if (again.size > 0) await sleep(SYNC_DEBOUNCE_MS);
      } catch (err) {
        if (full) this.#full = true;
        // After a failure neither side is known: read both next time.
        for (const p of scope) {
          this.#dirty.add(p);
          this.#remoteDirty.add(p);
        }
        await saveState(this.meta.file, this.meta, this.ctx.state).catch(() => undefined);
        if (!(await this.#recoverable(err))) return;
      }
    }
  }

  /** After a failed pass: wait while the sandbox is paused, or a moment; false when the session ended. */
  async #recoverable(err: unknown): Promise<boolean> {
    const error = err instanceof Error ? err : new Error(String(err));
    // Someone is still writing the file: not a failure, the next pass (after the writes settle) takes it.
    if (err instanceof LocalChangedError) {
      await sleep(SYNC_DEBOUNCE_MS);
      return !this.#stopped;
    }
    if (!isRamifyError(err) || !WAIT_CODES.has(err.code)) {
      if (this.opts.once === true || (isRamifyError(err) && (err.code === 'SANDBOX_NOT_FOUND' || err.code === 'SANDBOX_FAILED'))) return this.#fail(error);
      this.opts.onError?.(error);
      await sleep(RETRY_MS);
      return !this.#stopped;
    }
    for (;;) {
      if (this.#stopped) return false;
      const state = await this.sbx.getInfo().then((i) => i.state, (e: unknown) => (isRamifyError(e) && e.code === 'SANDBOX_NOT_FOUND' ? 'killed' : 'unknown'));
      if (state === 'running') return true;
      if (state === 'killed' || state === 'error') return this.#fail(error);
      await sleep(RETRY_MS);
    }
  }

  async #fail(err: Error): Promise<false> {
    this.#markReady(err);
    this.#stopped = true;
    clearTimeout(this.#timer);
    await Promise.all([this.#local?.close(), this.#remoteWatch?.stop().catch(() => undefined)]);
    this.#finish(err);
    for (const wake of this.#idleWaiters.splice(0)) wake();
    return false;
  }
}

/** chokidar's filter: keep `rel` unless it, or a directory above it, is ignored. */
function keepOrAncestorIgnored(keep: KeepPath, rel: string, isDir: boolean): boolean {
  const parts = rel.split('/');
  for (let i = 1; i < parts.length; i++) if (!keep(parts.slice(0, i).join('/'), true)) return false;
  return keep(rel, isDir);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
