/**
 * TEST DOUBLE: an in-memory agent for core's use-case tests and the daemon's HTTP-edge tests. It proves
 * nothing about the real agent or runtime. Its "sandbox" is a map of files, a list of connected
 * endpoints (to drive the quiet-network rule) and a tiny command language:
 * `echo TEXT` (stdout TEXT\n, exit 0), `fail N` (stderr, exit N), `cat` (echo stdin until closed),
 * `sleep` (runs until signalled), `oom` (killed for running out of memory: SIGKILL, `error: 'oom'`, and
 * an `oom` event naming the last identity's sandbox), anything else (exit 0, no output). A watch sees
 * the fake's own file calls (write, remove, rename) under its path; it lives in this session only.
 */
import {
  RamifyError, checkPtySize, type AgentEvent, type AgentExit, type AgentIdentity, type AgentOutputHandlers, type AgentSession, type AgentStartOptions,
  type AgentWatchHandlers, type FileInfo, type FilesystemEventType, type ProcessInfo, type PtySize, type WatchInfo, type WatchOptions,
} from '@ramify/contracts';

/** What a fake sandbox holds in "memory" (copied into checkpoints). */
export interface FakeGuestState {
  files: Record<string, string>;
  /** Connected non-loopback endpoints the agent reports. */
  endpoints: string[];
  /** Identities applied, oldest first. */
  identities: Array<Omit<AgentIdentity, 'entropy'> & { entropyHex: string }>;
  /** Set: the agent predates `quiesceNetwork` and rejects it as an unknown method (an older image's agent). */
  withoutQuiesce?: boolean;
}

interface FakeProcess {
  pid: number;
  cmd: string;
  handlers: AgentOutputHandlers[];
  exit: AgentExit | null;
  waiters: Array<(exit: AgentExit) => void>;
  stdout: Uint8Array[];
  stderr: Uint8Array[];
}

export class FakeAgentSession implements AgentSession {
  readonly guest: FakeGuestState;
  #closed = false;
  #closeListeners: Array<(reason: string) => void> = [];
  #eventListeners = new Set<(event: AgentEvent) => void>();
  #processes = new Map<number, FakeProcess>();
  #nextPid = 100;
  #watches = new Map<string, { path: string; seq: number; handlers: Set<AgentWatchHandlers> }>();

  constructor(guest: FakeGuestState) {
    this.guest = guest;
  }

  get closed(): boolean {
    return this.#closed;
  }

  #check(): void {
    if (this.#closed) throw new RamifyError('AGENT_UNREACHABLE', 'fake agent channel is closed');
  }

  async ping(): Promise<void> {
    this.#check();
  }

  async setIdentity(identity: AgentIdentity): Promise<void> {
    this.#check();
    const { entropy, ...rest } = identity;
    this.guest.identities.push({ ...rest, entropyHex: Buffer.from(entropy).toString('hex') });
  }

  async start(options: AgentStartOptions, handlers: AgentOutputHandlers): Promise<{ pid: number }> {
    this.#check();
    if (options.cwd !== undefined && options.cwd !== '/' && !options.cwd.startsWith('/root') && !options.cwd.startsWith('/tmp')) {
      throw new RamifyError('CWD_NOT_FOUND', `cwd '${options.cwd}' does not exist`);
    }
    const proc: FakeProcess = { pid: this.#nextPid++, cmd: options.cmd, handlers: [handlers], exit: null, waiters: [], stdout: [], stderr: [] };
    this.#processes.set(proc.pid, proc);
    const [verb, ...rest] = options.cmd.split(' ');
    queueMicrotask(() => {
      if (verb === 'echo') {
        this.#emit(proc, 'stdout', `${rest.join(' ')}\n`);
        this.#finish(proc, { exitCode: 0, signal: null, error: null });
      } else if (verb === 'oom') {
        const sandboxId = this.guest.identities.at(-1)?.sandboxId ?? null;
        this.pushEvent({ type: 'oom', sandboxId, at: Date.now(), pid: proc.pid, cmd: options.cmd, commandPid: proc.pid, killer: 'agent', rssBytes: 1 << 30, usedBytes: 1 << 30, limitBytes: 1 << 29 });
        this.#finish(proc, { exitCode: null, signal: 'SIGKILL', error: 'oom' });
      } else if (verb === 'fail') {
        this.#emit(proc, 'stderr', 'failed\n');
        this.#finish(proc, { exitCode: Number(rest[0] ?? 1), signal: null, error: null });
      } else if (verb !== 'cat' && verb !== 'sleep') {
        this.#finish(proc, { exitCode: 0, signal: null, error: null });
      }
    });
    return { pid: proc.pid };
  }

  #emit(proc: FakeProcess, stream: 'stdout' | 'stderr', text: string): void {
    const chunk = new TextEncoder().encode(text);
    proc[stream].push(chunk);
    for (const h of proc.handlers) (stream === 'stdout' ? h.onStdout : h.onStderr)?.(chunk);
  }

  #finish(proc: FakeProcess, exit: AgentExit): void {
    if (proc.exit) return;
    proc.exit = exit;
    for (const h of proc.handlers) h.onExit?.(exit);
    for (const w of proc.waiters) w(exit);
  }

  #process(pid: number): FakeProcess {
    const proc = this.#processes.get(pid);
    if (!proc) throw new RamifyError('PROCESS_NOT_FOUND', `process ${pid} not found`);
    return proc;
  }

  async attach(pid: number, from: { stdout: number; stderr: number }, handlers: AgentOutputHandlers) {
    this.#check();
    const proc = this.#process(pid);
    const replay = (chunks: Uint8Array[], offset: number): Uint8Array => Buffer.concat(chunks).subarray(offset);
    const out = replay(proc.stdout, from.stdout);
    const err = replay(proc.stderr, from.stderr);
    if (out.byteLength) handlers.onStdout?.(out);
    if (err.byteLength) handlers.onStderr?.(err);
    if (proc.exit) queueMicrotask(() => handlers.onExit?.(proc.exit as AgentExit));
    else proc.handlers.push(handlers);
    return { from, detach: () => (proc.handlers = proc.handlers.filter((h) => h !== handlers)) };
  }

  async wait(pid: number): Promise<AgentExit> {
    this.#check();
    const proc = this.#process(pid);
    if (proc.exit) return proc.exit;
    return new Promise<AgentExit>((resolve, reject) => {
      proc.waiters.push(resolve);
      this.onClose(() => reject(new RamifyError('AGENT_UNREACHABLE', 'fake agent channel closed')));
    });
  }

  async sendStdin(pid: number, data: Uint8Array): Promise<void> {
    this.#check();
    const proc = this.#process(pid);
    if (proc.cmd === 'cat') this.#emit(proc, 'stdout', Buffer.from(data).toString('utf8'));
  }

  async closeStdin(pid: number): Promise<void> {
    this.#check();
    const proc = this.#process(pid);
    if (proc.cmd === 'cat') this.#finish(proc, { exitCode: 0, signal: null, error: null });
  }

  async signal(pid: number, signal: NodeJS.Signals): Promise<void> {
    this.#check();
    this.#finish(this.#process(pid), { exitCode: null, signal, error: null });
  }

  /** Checks the size and that the process is known; a fake has no terminal to resize. */
  async resize(pid: number, size: PtySize): Promise<void> {
    this.#check();
    checkPtySize(size);
    this.#process(pid);
  }

  async listProcesses(): Promise<ProcessInfo[]> {
    this.#check();
    return [...this.#processes.values()].map((p) => ({
      pid: p.pid,
      cmd: p.cmd,
      cwd: '/root',
      startedAt: new Date(0).toISOString(),
      running: p.exit === null,
      exitCode: p.exit?.exitCode ?? null,
      signal: p.exit?.signal ?? null,
      error: p.exit?.error ?? null,
      stdoutBytes: Buffer.concat(p.stdout).byteLength,
      stderrBytes: Buffer.concat(p.stderr).byteLength,
    }));
  }

  async watch(options: WatchOptions, handlers: AgentWatchHandlers): Promise<WatchInfo & { detach: () => void }> {
    this.#check();
    if (this.guest.files[options.path] !== undefined) throw new RamifyError('NOT_A_DIRECTORY', `not a directory: ${options.path}`, { path: options.path });
    const watchId = `w${this.#watches.size + 1}`;
    const watch = { path: options.path, seq: 1, handlers: new Set([handlers]) };
    this.#watches.set(watchId, watch);
    return { watchId, path: options.path, recursive: options.recursive === true, nextSeq: 1, detach: () => watch.handlers.delete(handlers) };
  }

  /** Live events only (the fake keeps none to replay). */
  async attachWatch(watchId: string, from: number, handlers: AgentWatchHandlers): Promise<{ from: number; path: string; recursive: boolean; detach: () => void }> {
    this.#check();
    const watch = this.#watches.get(watchId);
    if (!watch) throw new RamifyError('WATCH_NOT_FOUND', `no watch '${watchId}'`, { watchId });
    watch.handlers.add(handlers);
    return { from: Math.max(from, watch.seq), path: watch.path, recursive: false, detach: () => watch.handlers.delete(handlers) };
  }

  async stopWatch(watchId: string): Promise<void> {
    this.#check();
    const watch = this.#watches.get(watchId);
    if (!watch) throw new RamifyError('WATCH_NOT_FOUND', `no watch '${watchId}'`, { watchId });
    this.#watches.delete(watchId);
    for (const h of watch.handlers) h.onEnd?.({ reason: 'stopped' });
  }

  #notify(type: FilesystemEventType, path: string): void {
    for (const watch of this.#watches.values()) {
      if (!path.startsWith(`${watch.path}/`)) continue;
      const event = { type, name: path.slice(watch.path.length + 1), path, isDir: false, seq: watch.seq++ };
      for (const h of watch.handlers) h.onEvents?.([event]);
    }
  }

  readFile(path: string): AsyncIterable<Uint8Array> {
    const guest = this.guest;
    const check = () => this.#check();
    return (async function* () {
      check();
      const content = guest.files[path];
      if (content === undefined) throw new RamifyError('FILE_NOT_FOUND', `file '${path}' not found`);
      yield new TextEncoder().encode(content);
    })();
  }

  async writeFile(path: string, data: AsyncIterable<Uint8Array>): Promise<FileInfo> {
    this.#check();
    const chunks: Uint8Array[] = [];
    for await (const chunk of data) chunks.push(chunk);
    const existed = this.guest.files[path] !== undefined;
    this.guest.files[path] = Buffer.concat(chunks).toString('utf8');
    this.#notify(existed ? 'write' : 'create', path);
    return this.stat(path);
  }

  async listDir(path: string): Promise<FileInfo[]> {
    this.#check();
    const prefix = path.endsWith('/') ? path : `${path}/`;
    return Promise.all(Object.keys(this.guest.files).filter((p) => p.startsWith(prefix)).map((p) => this.stat(p)));
  }

  async stat(path: string): Promise<FileInfo> {
    this.#check();
    const content = this.guest.files[path];
    if (content === undefined) throw new RamifyError('FILE_NOT_FOUND', `file '${path}' not found`);
    return { name: path.split('/').pop() ?? path, path, type: 'file', size: Buffer.byteLength(content), mode: 0o644, mtimeMs: 0 };
  }

  async mkdir(path: string): Promise<FileInfo> {
    this.#check();
    return { name: path.split('/').pop() ?? path, path, type: 'dir', size: 0, mode: 0o755, mtimeMs: 0 };
  }

  async remove(path: string): Promise<void> {
    this.#check();
    if (this.guest.files[path] !== undefined) this.#notify('remove', path);
    delete this.guest.files[path];
  }

  async rename(from: string, to: string): Promise<FileInfo> {
    this.#check();
    const content = this.guest.files[from];
    if (content === undefined) throw new RamifyError('FILE_NOT_FOUND', `file '${from}' not found`);
    delete this.guest.files[from];
    this.guest.files[to] = content;
    this.#notify('rename', from);
    this.#notify('create', to);
    return this.stat(to);
  }

  async setAttributes(path: string): Promise<FileInfo> {
    return this.stat(path);
  }

  async readLink(path: string): Promise<string> {
    this.#check();
    throw new RamifyError('BAD_REQUEST', `not a symlink: ${path}`);
  }

  async symlink(_target: string, path: string): Promise<FileInfo> {
    this.#check();
    throw new RamifyError('BAD_REQUEST', `the fake agent has no symlinks: ${path}`);
  }

  async networkEndpoints(): Promise<{ endpoints: string[] }> {
    this.#check();
    return { endpoints: [...this.guest.endpoints] };
  }

  /** Quiet when the guest reports no endpoint (the fake has no processes to stop). */
  async quiesceNetwork(): Promise<{ frozen: boolean; endpoints: string[] }> {
    this.#check();
    if (this.guest.withoutQuiesce) throw new RamifyError('BAD_REQUEST', "unknown agent method 'quiesceNetwork'");
    return { frozen: this.guest.endpoints.length === 0, endpoints: [...this.guest.endpoints] };
  }

  async close(): Promise<void> {
    this.shutdown('closed by host');
  }

  /** Close the channel as if it dropped (`reason` goes to the listeners). */
  shutdown(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const listener of this.#closeListeners) listener(reason);
  }

  onEvent(listener: (event: AgentEvent) => void): () => void {
    this.#eventListeners.add(listener);
    return () => this.#eventListeners.delete(listener);
  }

  /** Push `event` to the session's listeners, as the agent would (tests). */
  pushEvent(event: AgentEvent): void {
    if (this.#closed) return;
    for (const listener of [...this.#eventListeners]) listener(event);
  }

  onClose(listener: (reason: string) => void): void {
    this.#closeListeners.push(listener);
  }
}
