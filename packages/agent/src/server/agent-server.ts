/**
 * The agent's server: serves any number of successive or concurrent connections over one shared process
 * table, on a unix socket (gVisor: the host's `runsc exec` bridge reaches it), on a TCP port in the
 * sandbox's own network stack (gVisor: the host dials the sandbox's slot address; every connection opens
 * with the channel hello, `channel-key.ts`), on a virtio-serial port (microVM: the host connects to QEMU's
 * chardev socket; see `virtio-port.ts`), or on several at once. Connections come and go (the host drops
 * them before every checkpoint and reconnects after restore); processes, output rings and files outlive them.
 */
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import type { Duplex } from 'node:stream';
import { AgentEvents } from './agent-events.js';
import { BridgePids, bridgePidDir } from './bridge-pids.js';
import { ChannelKey, type ChannelTransport } from './channel-key.js';
import { AgentConnection } from './connection.js';
import { createHandler } from './handlers.js';
import { OomWatch, type OomKillerMode } from './memory/oom-watch.js';
import { ProcessTable, type ProcessTableOptions, type SandboxIdentityState } from './process-table.js';
import { SyscallHelper } from './syscall-helper.js';
import { ProcessFreezer } from './quiesce.js';
import { readRootDisk } from './root-disk.js';
import { WatchTable } from './watch/watch-table.js';
import { serveVirtioPort, type VirtioPortOptions, type VirtioPortServer } from './virtio-port.js';

export interface AgentServerOptions extends Omit<ProcessTableOptions, 'resetOomScore' | 'onKilled'> {
  /** Unix socket path; a stale file there is replaced, parents are created. */
  socketPath?: string;
  /** A virtio-serial port to serve host connections on. At least one of `socketPath`/`virtioPort` is needed. */
  virtioPort?: VirtioPortOptions;
  /**
   * A TCP port to listen on, on every address of the sandbox (gVisor: the host's agent channel). It admits
   * a connection only after a hello with the key a host set through the unix socket (`channel-key.ts`).
   */
  tcpPort?: number;
  /** Where diagnostics go (default: stderr). */
  log?: (line: string) => void;
  /** `false`: no system-call helper process (`syscall-helper.ts`); the hostname and clock are set with the tools. Default on. */
  syscallHelper?: boolean;
  /**
   * Who stops a process that exhausts the sandbox's memory (see `memory/oom-watch.ts`): `agent` (gVisor:
   * the agent's OOM guard), `kernel` (microVMs: the guest kernel; the agent protects itself and reports).
   * Absent: neither (an agent run outside a sandbox).
   */
  oomKiller?: OomKillerMode;
}

export interface RunningAgentServer {
  /** The socket server, when `socketPath` was given. */
  readonly server: Server | undefined;
  /** The TCP server, when `tcpPort` was given. */
  readonly tcpServer: Server | undefined;
  /** The virtio port server, when `virtioPort` was given. */
  readonly virtio: VirtioPortServer | undefined;
  readonly table: ProcessTable;
  /** Events pushed to the host (OOM kills). */
  readonly events: AgentEvents;
  /** Stop accepting connections and drop current ones (processes are left running), and the OOM watch. */
  close(): Promise<void>;
}

/** Listen on a unix socket path (a stale file there is replaced) or a TCP port on every address. */
async function listen(where: string | number, onConnection: (socket: Socket) => void, log: (line: string) => void): Promise<{ server: Server; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    onConnection(socket);
  });
  if (typeof where === 'string') {
    mkdirSync(dirname(where), { recursive: true });
    rmSync(where, { force: true });
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const listening = (): void => {
      server.off('error', reject);
      resolve();
    };
    if (typeof where === 'string') server.listen(where, listening);
    else server.listen(where, '0.0.0.0', listening);
  });
  if (typeof where === 'string') chmodSync(where, 0o600);
  server.on('error', (err) => log(`server error: ${err.message}`));
  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Start serving. Resolves once the socket (if any) accepts connections; the virtio port (if any) is
 * served in the background, waiting for the device and for hosts as long as needed.
 * @throws Error when neither transport is given or the socket cannot be bound.
 */
export async function startAgentServer(options: AgentServerOptions): Promise<RunningAgentServer> {
  if (!options.socketPath && !options.virtioPort) throw new Error('agent server needs a socket path, a virtio port, or both');
  const log = options.log ?? ((line: string) => process.stderr.write(`ramify-agent: ${line}\n`));
  // At a microVM's boot the root filesystem fills its disk: remember that size (see root-disk.ts).
  // The system-call helper starts with the agent, so that every image made from now on holds it.
  const identity: SandboxIdentityState = { envs: {}, rootFilesystemBytes: readRootDisk()?.sizeBytes, syscalls: options.syscallHelper === false ? null : SyscallHelper.start() };
  // The host's bridge (`socat ... UNIX-CONNECT:<socketPath>`) must keep running while the rest is frozen, and is
  // never an OOM victim: known by the pid it writes (bridge-pids.ts), else by its command line.
  const bridges = options.socketPath ? [options.socketPath] : [];
  const bridgePids = options.socketPath ? new BridgePids(bridgePidDir(options.socketPath)) : undefined;
  const events = new AgentEvents();
  const oom = new OomWatch(options.oomKiller, { events, identity, spareCommandLinesWith: bridges, bridges: bridgePids, log });
  const table = new ProcessTable(identity, { ...options, resetOomScore: oom.resetOomScore, onKilled: () => oom.commandKilled() });
  oom.start(table);
  const freezer = new ProcessFreezer({ spareCommandLinesWith: bridges, bridges: bridgePids });
  const handle = createHandler({
    table, identity, freezer, events, watches: new WatchTable(), roomForFiles: (bytes) => oom.roomForFiles(bytes), identityApplied: () => oom.identityApplied(), hostChannelPort: options.tcpPort,
  });
  // A new host connection means a checkpoint is over (restored, or failed): what was frozen for it goes on.
  const connect = (channel: Duplex): AgentConnection => {
    bridgePids?.prune();
    const thawed = freezer.thaw();
    if (thawed > 0) log(`continued ${thawed} processes stopped for a checkpoint`);
    const conn = new AgentConnection(channel, handle, log);
    events.attach(conn);
    return conn;
  };
  // Socket connections open with the channel hello (optional on the unix socket): see channel-key.ts.
  const key = new ChannelKey();
  const admitted = (transport: ChannelTransport) => (socket: Socket): void => {
    if (transport === 'tcp') socket.setNoDelay(true);
    void key.admit(socket, transport).then((ok) => {
      if (!ok) return;
      connect(socket);
      socket.resume();
    });
  };
  const socket = options.socketPath ? await listen(options.socketPath, admitted('unix'), log) : undefined;
  const tcp = options.tcpPort !== undefined ? await listen(options.tcpPort, admitted('tcp'), log) : undefined;
  const virtio = options.virtioPort ? serveVirtioPort(options.virtioPort, connect, log) : undefined;
  return {
    server: socket?.server,
    tcpServer: tcp?.server,
    virtio,
    table,
    events,
    close: async () => {
      oom.stop();
      identity.syscalls?.stop();
      await Promise.all([socket?.close(), tcp?.close(), virtio?.close()]);
    },
  };
}
