/**
 * The agent's server: listens on a unix socket and serves any number of successive or concurrent
 * connections over one shared process table. Connections come and go (the host drops them before every
 * checkpoint and reconnects after restore); processes outlive them.
 */
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { dirname } from 'node:path';
import { AgentConnection } from './connection.js';
import { createHandler } from './handlers.js';
import { ProcessTable, type ProcessTableOptions, type SandboxIdentityState } from './process-table.js';

export interface AgentServerOptions extends ProcessTableOptions {
  /** Unix socket path; a stale file there is replaced, parents are created. */
  socketPath: string;
  /** Where diagnostics go (default: stderr). */
  log?: (line: string) => void;
}

export interface RunningAgentServer {
  readonly server: Server;
  readonly table: ProcessTable;
  /** Stop accepting connections and drop current ones (processes are left running). */
  close(): Promise<void>;
}

/** Start listening. Resolves once the socket accepts connections. */
export async function startAgentServer(options: AgentServerOptions): Promise<RunningAgentServer> {
  const log = options.log ?? ((line: string) => process.stderr.write(`ramify-agent: ${line}\n`));
  const identity: SandboxIdentityState = { envs: {} };
  const table = new ProcessTable(identity, options);
  const handle = createHandler(table, identity);
  const sockets = new Set<import('node:net').Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    new AgentConnection(socket, handle, log);
  });
  mkdirSync(dirname(options.socketPath), { recursive: true });
  rmSync(options.socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  chmodSync(options.socketPath, 0o600);
  server.on('error', (err) => log(`server error: ${err.message}`));
  return {
    server,
    table,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
