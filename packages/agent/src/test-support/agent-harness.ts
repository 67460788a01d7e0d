/**
 * Test harness: runs the real agent server on the host as a child process on a temp unix socket, and
 * connects clients through real `bridge` child processes' stdio — the production path minus `runsc`.
 * Every process it starts (server, bridges, and everything the agent started, found by a unique
 * environment tag) is killed by {@link AgentFixture.stop}.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectAgent, type AgentClient } from '../client/agent-client.js';
import { childStdioChannel } from '../client/stdio-channel.js';

/** The compiled entry point (`dist/main.js`); tests of the bundle pass its path instead. */
export const COMPILED_ENTRY = fileURLToPath(new URL('../main.js', import.meta.url));

export interface AgentConnection {
  client: AgentClient;
  bridge: ChildProcess;
}

export interface AgentFixture {
  /** Temp directory holding the socket; tests may put files here (removed by stop). */
  dir: string;
  socketPath: string;
  server: ChildProcess;
  /** Environment tag every process started by this agent inherits. */
  tag: string;
  /** What the agent server wrote to stderr so far. */
  log(): string;
  /** Start a new bridge process and connect a client through its stdio. */
  connect(): Promise<AgentConnection>;
  /** Pids of live (non-zombie) processes carrying this fixture's tag. */
  taggedPids(): number[];
  /** Kill everything and remove the temp directory. */
  stop(): Promise<void>;
}

function waitExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Live pids whose environment contains `RAMIFY_TEST_TAG=<tag>`. */
export function pidsWithTag(tag: string): number[] {
  const needle = Buffer.from(`RAMIFY_TEST_TAG=${tag}\0`);
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      if (readFileSync(`/proc/${name}/environ`).includes(needle)) out.push(Number(name));
    } catch {
      // Gone or not readable.
    }
  }
  return out;
}

/**
 * Start an agent server (`entry serve --socket ... <args>`) and wait until it serves. With
 * `withSocket: false` no `--socket` is passed (give `--virtio-port` in `args`); `connect` then fails.
 */
export async function startAgent(options: { entry?: string; args?: string[]; withSocket?: boolean } = {}): Promise<AgentFixture> {
  const entry = options.entry ?? COMPILED_ENTRY;
  const dir = mkdtempSync(join(tmpdir(), 'ramify-agent-test-'));
  const socketPath = join(dir, 'agent.sock');
  const tag = randomBytes(8).toString('hex');
  const withSocket = options.withSocket ?? true;
  const server = spawn(process.execPath, [entry, 'serve', ...(withSocket ? ['--socket', socketPath] : []), ...(options.args ?? [])], {
    stdio: ['ignore', 'inherit', 'pipe'],
    env: { ...process.env, RAMIFY_TEST_TAG: tag },
  });
  let log = '';
  server.stderr?.on('data', (d: Buffer) => {
    log += d.toString();
  });
  const bridges = new Set<ChildProcess>();
  const clients = new Set<AgentClient>();
  await new Promise<void>((resolve, reject) => {
    const check = setInterval(() => {
      if (log.includes(withSocket ? 'listening on' : 'serving virtio port')) done(undefined);
      else if (server.exitCode !== null) done(new Error(`agent server exited: ${log}`));
    }, 10);
    const done = (err: Error | undefined): void => {
      clearInterval(check);
      if (err) reject(err);
      else resolve();
    };
  });

  const fixture: AgentFixture = {
    dir,
    socketPath,
    server,
    tag,
    log: () => log,
    async connect() {
      const bridge = spawn(process.execPath, [entry, 'bridge', '--socket', socketPath], { stdio: ['pipe', 'pipe', 'inherit'] });
      bridges.add(bridge);
      bridge.once('exit', () => bridges.delete(bridge));
      const client = await connectAgent(childStdioChannel(bridge));
      clients.add(client);
      return { client, bridge };
    },
    taggedPids: () => pidsWithTag(tag),
    async stop() {
      for (const c of clients) await c.close(1000).catch(() => undefined);
      for (const b of bridges) b.kill('SIGKILL');
      await Promise.all([...bridges].map(waitExit));
      for (const pid of pidsWithTag(tag)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
      server.kill('SIGKILL');
      await waitExit(server);
      rmSync(dir, { recursive: true, force: true });
      if (existsSync(dir)) throw new Error(`could not remove ${dir}`);
    },
  };
  return fixture;
}

/** Collect a process's output through handlers; `exited` resolves with the exit and all bytes. */
export function collector(): {
  handlers: { onStdout: (c: Uint8Array) => void; onStderr: (c: Uint8Array) => void; onExit: (e: import('@ramify/contracts').AgentExit) => void };
  stdout: () => Buffer;
  stderr: () => Buffer;
  stdoutChunks: Uint8Array[];
  exited: Promise<import('@ramify/contracts').AgentExit>;
} {
  const out: Uint8Array[] = [];
  const err: Uint8Array[] = [];
  let resolveExit!: (e: import('@ramify/contracts').AgentExit) => void;
  const exited = new Promise<import('@ramify/contracts').AgentExit>((r) => {
    resolveExit = r;
  });
  return {
    handlers: {
      onStdout: (c) => out.push(Buffer.from(c)),
      onStderr: (c) => err.push(Buffer.from(c)),
      onExit: (e) => resolveExit(e),
    },
    stdout: () => Buffer.concat(out),
    stderr: () => Buffer.concat(err),
    stdoutChunks: out,
    exited,
  };
}

/** Poll `predicate` every 20 ms until true; throws after `limitMs` (a safety bound, not a timing assertion). */
export async function eventually(predicate: () => boolean | Promise<boolean>, what: string, limitMs = 15_000): Promise<void> {
  const until = Date.now() + limitMs;
  while (!(await predicate())) {
    if (Date.now() > until) throw new Error(`gave up waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
