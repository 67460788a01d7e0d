/**
 * The in-sandbox entry point (bundled to `dist/agent.mjs`):
 *   node agent.mjs serve  [--socket PATH] [--tcp-port N] [--virtio-port DEVICE] [--virtio-poll-ms N] [--virtio-stall-ms N] [--ring-bytes N] [--oom-killer agent|kernel]
 *   node agent.mjs bridge [--socket PATH] [--connect-timeout-ms N]
 * `serve` runs the agent (under tini as PID 1 in the sandbox). It listens on the unix socket `--socket`
 * (default /run/ramify/agent.sock) and/or serves the virtio-serial port `--virtio-port` (microVMs, e.g.
 * /dev/virtio-ports/org.ramify.agent0): with `--virtio-port` alone there is no socket; give both to
 * serve both over one process table. On the port every host connection opens with the hello/ack
 * handshake (`protocol/virtio-handshake.ts`, host side `openVirtioChannel`); while no host is connected
 * the agent looks for one every `--virtio-poll-ms` (default 50); `--tcp-port` also listens on that TCP port
 * (gVisor: the host dials it through the sandbox's slot address; a connection there must open with the
 * channel hello and the key a host gave through the socket, `server/channel-key.ts`); a frame that stops arriving midway for
 * `--virtio-stall-ms` (default 5000) is dropped. `--oom-killer` says who stops a process that exhausts
 * the sandbox's memory: `agent` (gVisor, which has no OOM killer: the agent's guard kills) or `kernel`
 * (microVMs: the guest kernel kills; the agent keeps itself out of its choice and reports each kill).
 * `bridge` splices stdio to the socket (the gVisor host runs it with `runsc exec`).
 */
import { runBridge } from './server/bridge.js';

export const DEFAULT_SOCKET_PATH = '/run/ramify/agent.sock';

const USAGE = `usage: agent.mjs serve  [--socket PATH] [--tcp-port N] [--virtio-port DEVICE] [--virtio-poll-ms N] [--virtio-stall-ms N] [--ring-bytes N] [--oom-killer agent|kernel]
       agent.mjs bridge [--socket PATH] [--connect-timeout-ms N]
serve listens on --socket (default ${DEFAULT_SOCKET_PATH}) unless only --virtio-port is given; give both to serve both;
--tcp-port adds a TCP port whose connections must open with the channel hello.
`;

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i >= 0) return args[i + 1];
  const eq = args.find((a) => a.startsWith(`${name}=`));
  return eq?.slice(name.length + 1);
}

function numberFlag(args: string[], name: string): number | undefined {
  const v = flag(args, name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) {
    process.stderr.write(`ramify-agent: ${name} needs a non-negative number, got '${v}'\n`);
    process.exit(2);
  }
  return n;
}

async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  const socketFlag = flag(args, '--socket');
  if (command === 'bridge') {
    await runBridge({ socketPath: socketFlag ?? DEFAULT_SOCKET_PATH, connectTimeoutMs: numberFlag(args, '--connect-timeout-ms') ?? 5000 });
    return;
  }
  if (command === 'serve') {
    const virtioPath = flag(args, '--virtio-port');
    const oomKiller = flag(args, '--oom-killer');
    if (oomKiller !== undefined && oomKiller !== 'agent' && oomKiller !== 'kernel') {
      process.stderr.write(`ramify-agent: --oom-killer is 'agent' or 'kernel', got '${oomKiller}'\n`);
      process.exit(2);
    }
    const socketPath = socketFlag ?? (virtioPath ? undefined : DEFAULT_SOCKET_PATH);
    const { startAgentServer } = await import('./server/agent-server.js');
    process.on('uncaughtException', (err) => process.stderr.write(`ramify-agent: uncaught: ${err.stack ?? err}\n`));
    process.on('unhandledRejection', (err) => process.stderr.write(`ramify-agent: unhandled rejection: ${String(err)}\n`));
    process.on('SIGPIPE', () => undefined);
    await startAgentServer({
      socketPath,
      virtioPort: virtioPath ? { path: virtioPath, pollMs: numberFlag(args, '--virtio-poll-ms'), stallMs: numberFlag(args, '--virtio-stall-ms') } : undefined,
      ringBytes: numberFlag(args, '--ring-bytes'),
      tcpPort: numberFlag(args, '--tcp-port'),
      oomKiller,
    });
    if (virtioPath) process.stderr.write(`ramify-agent: serving virtio port ${virtioPath} (pid ${process.pid})\n`);
    if (socketPath) process.stderr.write(`ramify-agent: listening on ${socketPath} (pid ${process.pid})\n`);
    const tcpPort = numberFlag(args, '--tcp-port');
    if (tcpPort !== undefined) process.stderr.write(`ramify-agent: listening on TCP port ${tcpPort}\n`);
    return;
  }
  process.stderr.write(USAGE);
  process.exit(2);
}

void main(process.argv.slice(2));
