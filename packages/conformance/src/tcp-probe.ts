/**
 * A TCP connection over a sandbox's network card, for the "pause never kills a sandbox" case.
 *
 * The peer listens on the sandbox's default gateway, inside the sandbox's router namespace
 * (`<prefix>-r<slot>`, made by the daemon under the suite's own prefix), and a process in the sandbox
 * connects to it through eth0. The peer is a small Node program started with `nsenter` into that
 * namespace. It is not a host-namespace listener on purpose: the slot addresses (`10.253.0.0/16`) are
 * the same for every daemon prefix, so when another Ramify daemon runs on the host, a reply routed by
 * the host can land on the other daemon's veth with the same address; the router namespace is reached
 * without any host routing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { waitFor } from './support.js';

/** The router namespace paired with sandbox namespace `<prefix>-s<slot>`. */
export const routerNamespaceOf = (sandboxNs: string): string => sandboxNs.replace(/-s(\d+)$/, '-r$1');

// The peer: listen on argv[1], report `port N`, `connected`, data and `closed` on stdout; on stdin EOF
// close every connection first (this side closes: no TIME_WAIT in the sandbox), then exit.
const PEER_SCRIPT = `
const net = require('net'); const socks = [];
const server = net.createServer((c) => { socks.push(c); console.log('connected');
  c.on('data', (d) => console.log('data ' + JSON.stringify(d.toString()))); c.on('close', () => console.log('closed')); c.on('error', () => {}); });
server.listen(0, process.argv[1], () => console.log('port ' + server.address().port));
process.stdin.on('end', () => { for (const c of socks) c.destroy(); server.close(); setTimeout(() => process.exit(0), 100); });
process.stdin.resume();
`;

/** A TCP peer inside a router namespace; see the module comment. */
export class GatewayPeer {
  /** Every line the peer printed. */
  readonly lines: string[] = [];
  private exited: Promise<void>;

  private constructor(private readonly child: ChildProcess, readonly address: string, readonly port: number) {
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  /** Start a peer listening on `address` (the gateway) inside namespace `netns`. */
  static async open(netns: string, address: string): Promise<GatewayPeer> {
    const child = spawn('nsenter', [`--net=/var/run/netns/${netns}`, process.execPath, '-e', PEER_SCRIPT, address], { stdio: ['pipe', 'pipe', 'pipe'] });
    const lines: string[] = [];
    const reader = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    reader.on('line', (line) => lines.push(line));
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
    const port = await waitFor(async () => {
      if (child.exitCode !== null) throw new Error(`peer exited: ${stderr}`);
      const m = lines.map((l) => /^port (\d+)$/.exec(l)).find(Boolean);
      return m ? Number(m[1]) : undefined;
    }, { timeoutMs: 15_000, intervalMs: 50, what: `the TCP peer in ${netns}` });
    const peer = new GatewayPeer(child, address, port);
    reader.removeAllListeners('line');
    peer.lines.push(...lines);
    reader.on('line', (line) => peer.lines.push(line));
    return peer;
  }

  /** True while a connection is open (connected and not closed). */
  get connected(): boolean {
    return this.lines.filter((l) => l === 'connected').length > this.lines.filter((l) => l === 'closed').length;
  }

  /** Wait until some connection sent `text`. */
  async waitForText(text: string, timeoutMs: number): Promise<void> {
    await waitFor(async () => this.lines.some((l) => l.startsWith('data ') && (JSON.parse(l.slice(5)) as string).includes(text)),
      { timeoutMs, what: `'${text}' from the sandbox over TCP` });
  }

  /** Close every connection from this side, then stop the peer. Idempotent. */
  async close(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.stdin?.end();
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
      await this.exited;
      clearTimeout(timer);
    }
  }
}
