/**
 * `NflogReader`: reads the packets the egress table logs to its NFLOG group. It runs `ulogd` (ulogd2,
 * with the JSON output plugin) as a child process with a generated config (NFLOG input → JSON over a unix
 * socket this process listens on; nothing goes to syslog or a log file) and hands every logged packet of
 * the table's prefix to `onPacket`.
 *
 * Files live in `runDir` (config, socket, pid file). A ulogd left running by an earlier process with the
 * same `runDir` (a daemon killed with -9) is stopped first: it would hold the NFLOG group, which only one
 * listener may bind. If ulogd dies later it is restarted (backoff 1 s doubling to 30 s), each death
 * reported to `onError`; packets logged meanwhile are lost.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { access, mkdir, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { RamifyError } from '@ramify/contracts';

/** One logged packet (IPv4). */
export interface NflogPacket {
  /** The log prefix after `<table prefix> ` (`a`, `d`, `p`; see `NFLOG_KINDS`). */
  kind: string;
  /** When the kernel logged it. */
  at: Date;
  /** Interface the packet came in on (a slot's host veth for sandbox traffic); empty when none. */
  inInterface: string;
  /** IP protocol number (6 TCP, 17 UDP, 1 ICMP, ...). */
  protocol: number;
  source: string;
  destination: string;
  /** TCP/UDP ports; null for other protocols. */
  sourcePort: number | null;
  destinationPort: number | null;
  /** ICMP type/code and echo id/sequence, when ICMP. */
  icmp: { type: number; code: number; id: number | null; sequence: number | null } | null;
}

export interface NflogReaderOptions {
  /** Table prefix: only messages logged with the prefix `<prefix> <kind>` are passed on. */
  prefix: string;
  /** NFLOG group to bind. */
  group: number;
  /** Directory for the generated config, the socket and the pid file (created; its socket path must stay under 100 bytes). */
  runDir: string;
  /** The ulogd binary; default the first of /usr/sbin/ulogd, /usr/local/sbin/ulogd, /sbin/ulogd that exists. */
  ulogdPath?: string;
  /** Directory holding ulogd's plugins (`ulogd_output_JSON.so`, ...); default found under /usr/lib. */
  pluginDir?: string;
  onPacket(packet: NflogPacket): void;
  /** ulogd errors, deaths and restarts; malformed lines; throws of `onPacket`. */
  onError(error: unknown): void;
  /** Limit for ulogd to bind the group and connect; default 5000 ms. */
  readyTimeoutMs?: number;
}

const PLUGINS = ['ulogd_inppkt_NFLOG.so', 'ulogd_raw2packet_BASE.so', 'ulogd_filter_IFINDEX.so', 'ulogd_filter_IP2STR.so', 'ulogd_output_JSON.so'];
const ULOGD_CANDIDATES = ['/usr/sbin/ulogd', '/usr/local/sbin/ulogd', '/sbin/ulogd'];

export class NflogReader {
  private readonly options: NflogReaderOptions;
  private readonly files: { config: string; socket: string; pid: string };
  private readonly server: Server;
  private readonly connections = new Set<Socket>();
  private child: ChildProcess | null = null;
  private closed = false;
  private restartDelayMs = 1000;
  private output: string[] = [];

  private constructor(options: NflogReaderOptions, server: Server) {
    this.options = options;
    this.server = server;
    this.files = NflogReader.filesIn(options.runDir);
  }

  /**
   * Write the config, listen on the socket, start ulogd and wait until it has bound the group. Rejects
   * `RUNTIME_UNAVAILABLE` when ulogd or its plugins are not installed (`apt-get install ulogd2 ulogd2-json`),
   * `RUNTIME_ERROR` when it does not start (e.g. another process holds the group); nothing is left running then.
   */
  static async start(options: NflogReaderOptions): Promise<NflogReader> {
    const ulogd = options.ulogdPath ?? (await firstExisting(ULOGD_CANDIDATES));
    const pluginDir = options.pluginDir ?? (await findPluginDir());
    if (!ulogd || !(await exists(ulogd))) throw new RamifyError('RUNTIME_UNAVAILABLE', 'ulogd is not installed (apt-get install ulogd2 ulogd2-json); nftables verdicts are not logged');
    if (!pluginDir) throw new RamifyError('RUNTIME_UNAVAILABLE', 'the ulogd JSON plugin is not installed (apt-get install ulogd2-json); nftables verdicts are not logged');
    const files = NflogReader.filesIn(options.runDir);
    await mkdir(options.runDir, { recursive: true, mode: 0o700 });
    await stopStale(files.pid, files.config);
    await rm(files.socket, { force: true });
    await writeFile(files.config, ulogdConfig(options.group, pluginDir, files.socket), { mode: 0o600 });
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(files.socket, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const reader = new NflogReader(options, server);
    server.on('connection', (socket) => reader.read(socket));
    server.on('error', (err) => options.onError(err));
    try {
      await reader.spawn(ulogd);
    } catch (err) {
      await reader.close();
      throw err;
    }
    return reader;
  }

  /** Pid of the running ulogd, or null. */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Stop ulogd (SIGTERM, SIGKILL after 2 s), close the socket, remove the files (and `runDir` when empty). Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const child = this.child;
    this.child = null;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
      await exited;
      clearTimeout(timer);
    }
    for (const socket of this.connections) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await Promise.all(Object.values(this.files).map((f) => rm(f, { force: true })));
    await rmdir(this.options.runDir).catch(() => undefined); // only when empty
  }

  private static filesIn(runDir: string): { config: string; socket: string; pid: string } {
    return { config: join(runDir, 'ulogd.conf'), socket: join(runDir, 'ulogd.sock'), pid: join(runDir, 'ulogd.pid') };
  }

  /** Start ulogd; resolves once it connected to the socket (the group is bound by then), rejects if it exits first. */
  private async spawn(ulogd: string): Promise<void> {
    this.output = [];
    const limit = this.options.readyTimeoutMs ?? 5000;
    let ready = false;
    let settle: (err?: Error) => void = () => undefined;
    // Listen before spawning: ulogd may connect before the next tick.
    const started = new Promise<void>((resolve, reject) => {
      settle = (err) => {
        clearTimeout(timer);
        this.server.off('connection', onConnection);
        if (err) reject(err);
        else resolve();
      };
      const onConnection = (): void => settle();
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        settle(new RamifyError('RUNTIME_ERROR', `ulogd did not bind NFLOG group ${this.options.group} within ${limit} ms`));
      }, limit);
      this.server.once('connection', onConnection);
    });
    const child = spawn(ulogd, ['-c', this.files.config], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream! }).on('line', (line) => {
        this.output.push(line);
        if (this.output.length > 20) this.output.shift();
      });
    }
    child.once('error', (err) => settle(new RamifyError('RUNTIME_ERROR', `ulogd could not start: ${err.message}`)));
    child.once('spawn', () => void writeFile(this.files.pid, `${child.pid}\n`).catch((err: unknown) => this.options.onError(err)));
    child.once('exit', (code, signal) => {
      if (!ready) return settle(new RamifyError('RUNTIME_ERROR', `ulogd exited (${code ?? signal}) while starting: ${this.output.join(' | ')}`));
      if (this.closed || this.child !== child) return;
      this.child = null;
      this.options.onError(new RamifyError('RUNTIME_ERROR', `ulogd exited (${code ?? signal}); restarting: ${this.output.join(' | ')}`));
      void this.restart(ulogd);
    });
    await started;
    ready = true;
    this.restartDelayMs = 1000;
  }

  private async restart(ulogd: string): Promise<void> {
    while (!this.closed) {
      await sleep(this.restartDelayMs);
      this.restartDelayMs = Math.min(30_000, this.restartDelayMs * 2);
      if (this.closed) return;
      try {
        await this.spawn(ulogd);
        return;
      } catch (err) {
        this.options.onError(err);
      }
    }
  }

  private read(socket: Socket): void {
    this.connections.add(socket);
    socket.on('close', () => this.connections.delete(socket));
    socket.on('error', (err) => this.options.onError(err));
    const wanted = `${this.options.prefix} `;
    createInterface({ input: socket }).on('line', (line) => {
      try {
        const packet = parseNflogLine(line, wanted);
        if (packet) this.options.onPacket(packet);
      } catch (err) {
        this.options.onError(err);
      }
    });
  }
}

/** One ulogd JSON line → a packet, or null when it is not ours (other prefix, not IPv4). Throws on bad JSON. */
export function parseNflogLine(line: string, wantedPrefix: string): NflogPacket | null {
  const j = JSON.parse(line) as Record<string, unknown>;
  const prefix = typeof j['oob.prefix'] === 'string' ? j['oob.prefix'] : '';
  if (!prefix.startsWith(wantedPrefix) || typeof j.src_ip !== 'string' || typeof j.dest_ip !== 'string') return null;
  const num = (key: string): number | null => (typeof j[key] === 'number' ? (j[key] as number) : null);
  const protocol = num('ip.protocol') ?? -1;
  const seconds = num('oob.time.sec');
  const at = seconds === null ? new Date() : new Date(seconds * 1000 + Math.floor((num('oob.time.usec') ?? 0) / 1000));
  const ported = protocol === 6 || protocol === 17;
  return {
    kind: prefix.slice(wantedPrefix.length).trim(),
    at,
    inInterface: typeof j['oob.in'] === 'string' ? j['oob.in'] : '',
    protocol,
    source: j.src_ip,
    destination: j.dest_ip,
    sourcePort: ported ? num('src_port') : null,
    destinationPort: ported ? num('dest_port') : null,
    icmp: protocol === 1 ? { type: num('icmp.type') ?? -1, code: num('icmp.code') ?? -1, id: num('icmp.echoid'), sequence: num('icmp.echoseq') } : null,
  };
}

function ulogdConfig(group: number, pluginDir: string, socket: string): string {
  return [
    '# Generated by ramify (egress verdict log); rewritten at every start.',
    '[global]',
    'logfile="stdout"',
    'loglevel=7',
    ...PLUGINS.map((p) => `plugin="${join(pluginDir, p)}"`),
    'stack=log1:NFLOG,base1:BASE,ifi1:IFINDEX,ip2str1:IP2STR,json1:JSON',
    '[log1]',
    `group=${group}`,
    'netlink_socket_buffer_size=1048576',
    'netlink_socket_buffer_maxsize=4194304',
    // Deliver each packet at once (the kernel's default batches up to 100 packets or 1 s).
    'netlink_qthreshold=1',
    'netlink_qtimeout=10',
    '[json1]',
    'mode="unix"',
    `file="${socket}"`,
    'timestamp=0',
    '',
  ].join('\n');
}

/** Stop a ulogd an earlier process started with this config (pid file + matching command line). */
async function stopStale(pidFile: string, config: string): Promise<void> {
  const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
  if (!Number.isInteger(pid) || pid <= 1) return;
  const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  if (!cmdline.includes('ulogd') || !cmdline.includes(config)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  for (let i = 0; i < 40 && (await exists(`/proc/${pid}/cmdline`)) && !(await isZombie(pid)); i++) await sleep(50);
  if ((await exists(`/proc/${pid}`)) && !(await isZombie(pid))) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}

async function isZombie(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat === '' || / Z /.test(stat.slice(stat.lastIndexOf(')')));
}

async function findPluginDir(): Promise<string | null> {
  const roots = ['/usr/lib', '/usr/lib64', '/usr/local/lib'];
  const candidates: string[] = [];
  for (const root of roots) {
    candidates.push(join(root, 'ulogd'));
    for (const entry of await readdir(root).catch(() => [] as string[])) candidates.push(join(root, entry, 'ulogd'));
  }
  for (const dir of candidates) {
    if ((await Promise.all(PLUGINS.map((p) => exists(join(dir, p))))).every(Boolean)) return dir;
  }
  return null;
}

async function firstExisting(paths: readonly string[]): Promise<string | null> {
  for (const p of paths) if (await exists(p)) return p;
  return null;
}

const exists = (path: string): Promise<boolean> => access(path).then(() => true, () => false);
