/**
 * The in-sandbox entry point (bundled to `dist/agent.mjs`):
 *   node agent.mjs serve  --socket /run/ramify/agent.sock [--ring-bytes N]
 *   node agent.mjs bridge --socket /run/ramify/agent.sock [--connect-timeout-ms N]
 * `serve` runs the agent (under tini as PID 1 in the sandbox); `bridge` splices stdio to its socket.
 */
import { runBridge } from './server/bridge.js';

export const DEFAULT_SOCKET_PATH = '/run/ramify/agent.sock';

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
  const socketPath = flag(args, '--socket') ?? DEFAULT_SOCKET_PATH;
  if (command === 'bridge') {
    await runBridge({ socketPath, connectTimeoutMs: numberFlag(args, '--connect-timeout-ms') ?? 5000 });
    return;
  }
  if (command === 'serve') {
    const { startAgentServer } = await import('./server/agent-server.js');
    process.on('uncaughtException', (err) => process.stderr.write(`ramify-agent: uncaught: ${err.stack ?? err}\n`));
    process.on('unhandledRejection', (err) => process.stderr.write(`ramify-agent: unhandled rejection: ${String(err)}\n`));
    process.on('SIGPIPE', () => undefined);
    await startAgentServer({ socketPath, ringBytes: numberFlag(args, '--ring-bytes') });
    process.stderr.write(`ramify-agent: listening on ${socketPath} (pid ${process.pid})\n`);
    return;
  }
  process.stderr.write('usage: agent.mjs serve|bridge [--socket PATH]\n');
  process.exit(2);
}

void main(process.argv.slice(2));
