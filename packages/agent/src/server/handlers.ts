/**
 * The agent's request handlers: one entry per protocol method (see `AgentMethods`). Each validates
 * its params, calls the module that owns the concept, and returns the result.
 */
import { RamifyError, type AgentIdentity, type AgentStartOptions, type StreamOffsets } from '@ramify/contracts';
import { PROTOCOL_VERSION, type MethodName } from '../protocol/messages.js';
import type { AgentEvents } from './agent-events.js';
import type { AgentConnection } from './connection.js';
import { receiveFile, sendFile } from './file-transfer.js';
import { listDir, makeDir, makeSymlink, readLink, removePath, renamePath, resolvePath, setAttributes, statPath } from './files.js';
import { applyIdentity } from './identity.js';
import { networkEndpoints } from './net-endpoints.js';
import type { ProcessTable, SandboxIdentityState } from './process-table.js';
import { quiesceNetwork, type ProcessFreezer } from './quiesce.js';
import type { WatchTable } from './watch/watch-table.js';

type Params = Record<string, unknown>;

function int(p: Params, key: string): number {
  const v = p[key];
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new RamifyError('BAD_REQUEST', `'${key}' must be an integer`);
  return v;
}

function str(p: Params, key: string): string {
  const v = p[key];
  if (typeof v !== 'string' || v.length === 0) throw new RamifyError('BAD_REQUEST', `'${key}' must be a non-empty string`);
  return v;
}

function offsets(v: unknown): StreamOffsets {
  const o = (v ?? {}) as Partial<StreamOffsets>;
  const clean = (n: unknown): number => (typeof n === 'number' && n > 0 ? Math.floor(n) : 0);
  return { stdout: clean(o.stdout), stderr: clean(o.stderr) };
}

/** What the handlers share across connections. */
export interface HandlerDeps {
  table: ProcessTable;
  identity: SandboxIdentityState;
  freezer: ProcessFreezer;
  events: AgentEvents;
  watches: WatchTable;
  /** Whether `bytes` more of file data fit in the sandbox (uploads stop with `NO_SPACE` before they would not). */
  roomForFiles?: (bytes: number) => boolean;
  /** Called after every identity was applied (the OOM watch fits /dev/shm to the memory this restore has). */
  identityApplied?: () => Promise<void>;
  /** The agent's TCP port, when it listens on one: the host's connections to it are left out of endpoint reports. */
  hostChannelPort?: number;
}

/** Build the request handler over the state every connection shares. */
export function createHandler({ table, identity, freezer, events, watches, roomForFiles, identityApplied, hostChannelPort }: HandlerDeps) {
  const methods: Record<MethodName, (p: Params, conn: AgentConnection) => Promise<unknown>> = {
    ping: async () => ({ protocol: PROTOCOL_VERSION, node: process.version, agentPid: process.pid }),
    setIdentity: async (p) => {
      const previous = identity.sandboxId;
      const report = await applyIdentity(p as unknown as AgentIdentity, identity);
      // Another sandbox now (an image restored into a new one): its process list starts from what runs.
      if (previous !== undefined && identity.sandboxId !== previous) table.forgetExited();
      if (identity.sandboxId !== undefined) events.keepOnly(identity.sandboxId);
      await identityApplied?.();
      return report;
    },
    start: async (p, conn) => {
      const sub = int(p, 'sub');
      const proc = await table.start(p as unknown as AgentStartOptions);
      conn.subscribe(sub, proc, { 1: 0, 2: 0 });
      return { pid: proc.pid };
    },
    attach: async (p, conn) => {
      const proc = table.get(int(p, 'pid'));
      const want = offsets(p.from);
      const clamp = (fd: 1 | 2, n: number): number => Math.min(Math.max(n, proc.rings[fd].start), proc.rings[fd].end);
      const from = { 1: clamp(1, want.stdout), 2: clamp(2, want.stderr) };
      conn.subscribe(int(p, 'sub'), proc, from);
      return { from: { stdout: from[1], stderr: from[2] } };
    },
    detach: async (p, conn) => {
      conn.unsubscribe(int(p, 'sub'));
      return {};
    },
    wait: (p) => table.get(int(p, 'pid')).waitExit(),
    stdin: async (p) => {
      if (!(p.data instanceof Uint8Array)) throw new RamifyError('BAD_REQUEST', "'data' must be binary");
      await table.get(int(p, 'pid')).sendStdin(p.data);
      return {};
    },
    closeStdin: async (p) => {
      table.get(int(p, 'pid')).closeStdin();
      return {};
    },
    resize: async (p) => {
      table.get(int(p, 'pid')).resize({ cols: p.cols as number, rows: p.rows as number });
      return {};
    },
    signal: async (p) => {
      if (typeof p.signal !== 'string') throw new RamifyError('BAD_REQUEST', "'signal' must be a string like SIGTERM");
      table.get(int(p, 'pid')).signal(p.signal);
      return {};
    },
    listProcesses: async () => table.list(),
    readFile: (p, conn) => sendFile(resolvePath(p.path), int(p, 'sid'), typeof p.window === 'number' ? p.window : 0, conn, conn.streams),
    writeFile: (p, conn) =>
      receiveFile(resolvePath(p.path), { sid: int(p, 'sid'), mode: typeof p.mode === 'number' ? p.mode : undefined, sink: conn, streams: conn.streams, roomForFiles }),
    listDir: (p) => listDir(resolvePath(p.path), p.depth === undefined || p.depth === null ? 1 : (p.depth as number)),
    stat: (p) => statPath(resolvePath(p.path)),
    mkdir: (p) => makeDir(resolvePath(p.path)),
    remove: async (p) => {
      await removePath(resolvePath(p.path));
      return {};
    },
    rename: (p) => renamePath(resolvePath(p.from), resolvePath(p.to)),
    watch: (p, conn) => watches.start({ path: String(p.path ?? ''), recursive: p.recursive === true }, conn, int(p, 'sub')),
    watchAttach: async (p, conn) => watches.attach(str(p, 'watchId'), int(p, 'from'), conn, int(p, 'sub')),
    watchStop: async (p) => {
      watches.stop(str(p, 'watchId'));
      return {};
    },
    setAttributes: (p) => setAttributes(resolvePath(p.path), p),
    readLink: async (p) => ({ target: await readLink(resolvePath(p.path)) }),
    symlink: async (p) => {
      if (typeof p.target !== 'string' || p.target.length === 0 || p.target.includes('\0')) throw new RamifyError('BAD_REQUEST', "'target' must be a non-empty string without NUL");
      return makeSymlink(p.target, resolvePath(p.path));
    },
    networkEndpoints: () => networkEndpoints(undefined, hostChannelPort),
    quiesceNetwork: () => quiesceNetwork(freezer, undefined, hostChannelPort),
  };

  return async (method: string, params: unknown, conn: AgentConnection): Promise<unknown> => {
    const fn = Object.prototype.hasOwnProperty.call(methods, method) ? methods[method as MethodName] : undefined;
    if (!fn) throw new RamifyError('BAD_REQUEST', `unknown agent method '${method}'`);
    if (typeof params !== 'object' || params === null) throw new RamifyError('BAD_REQUEST', 'params must be a map');
    return fn(params as Params, conn);
  };
}
