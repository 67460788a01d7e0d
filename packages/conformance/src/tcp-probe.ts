/**
 * A TCP connection from a sandbox to the host over the sandbox's network card, for the "pause never
 * kills a sandbox" case. The host listens on the host-side address of the sandbox's own slot veth
 * (`<prefix>h<slot>`, inside the suite's namespaces), and a process in the sandbox connects to it
 * through its default route (sandbox netns → router netns → host).
 */
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { hostRun, listSandboxNamespaces } from './host-cleanup.js';
import { waitFor } from './support.js';

/** The sandbox namespaces that exist now (take before creating the sandbox of interest). */
export async function sandboxNamespaceSet(prefix: string): Promise<Set<string>> {
  return new Set(await listSandboxNamespaces(prefix));
}

/**
 * The host-side IPv4 address of the slot of the one sandbox created since `before` was taken.
 * Throws when exactly one new sandbox namespace cannot be found.
 */
export async function hostAddressOfNewSlot(prefix: string, before: ReadonlySet<string>): Promise<string> {
  const created = (await listSandboxNamespaces(prefix)).filter((name) => !before.has(name));
  if (created.length !== 1) throw new Error(`expected one new sandbox namespace, found ${JSON.stringify(created)}`);
  const slot = (created[0] as string).slice(`${prefix}-s`.length);
  const { stdout } = await hostRun(['ip', '-o', '-4', 'addr', 'show', 'dev', `${prefix}h${slot}`]);
  const address = /inet (\d+\.\d+\.\d+\.\d+)\//.exec(stdout)?.[1];
  if (!address) throw new Error(`no IPv4 address on ${prefix}h${slot}: ${stdout}`);
  return address;
}

/** Other host interfaces holding `address` too (another daemon using the same slot range), for diagnostics. */
export async function interfacesWithAddress(address: string): Promise<string[]> {
  const { stdout } = await hostRun(['ip', '-o', '-4', 'addr', 'show']);
  return stdout.split('\n').filter((line) => line.includes(`inet ${address}/`)).map((line) => line.split(/\s+/)[1] ?? '');
}

/** A host TCP listener that records the connections it accepts and the bytes they send. */
export class HostListener {
  readonly sockets: Socket[] = [];
  received = '';
  private constructor(private readonly server: Server, readonly address: string, readonly port: number) {}

  /** Listen on `address`, a free port. */
  static async open(address: string): Promise<HostListener> {
    const server = createServer();
    server.listen(0, address);
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    const listener = new HostListener(server, address, port);
    server.on('connection', (socket) => {
      listener.sockets.push(socket);
      socket.on('data', (d) => { listener.received += d.toString('utf8'); });
      socket.on('error', () => undefined);
    });
    return listener;
  }

  /** Wait until `text` arrived on some connection. */
  async waitForText(text: string, timeoutMs: number): Promise<void> {
    await waitFor(async () => this.received.includes(text), { timeoutMs, what: `'${text.trim()}' from the sandbox over TCP` });
  }

  /** True while at least one accepted connection is still open both ways. */
  get connected(): boolean {
    return this.sockets.some((s) => !s.destroyed && s.readyState === 'open');
  }

  /** Close every connection (the host side closes first) and the listener. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
