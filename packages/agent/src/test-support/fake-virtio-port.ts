/**
 * Test stand-in for QEMU's virtio-serial port (no VM can boot in these tests). The guest end is a real
 * character device: the slave of a raw pseudo-terminal made by `test-native/pty-port.c`, linked at
 * `portPath`. The host end is a unix socket at `hostSocketPath` that behaves like QEMU's
 * `-chardev socket,server=on,wait=off`: one host at a time, bytes relayed both ways, and what the guest
 * writes while no host is connected is discarded.
 *
 * How it differs from the real port, and how the agent's code covers both:
 *  - `seen-by-guest` (default): each host connection gets a new pty, and when the host leaves, the pty is
 *    hung up (the agent's read returns EOF, like virtio) and the link removed, so the agent's reopen gets
 *    ENOENT until the next host connects. A real port reads EOF (0) instead of ENOENT while no host is
 *    connected; the agent polls both the same way.
 *  - `unseen-by-guest`: one pty for all host connections, the guest never learns that a host left: what a
 *    restore into a new QEMU process whose host is already connected looks like to the guest (QEMU sends
 *    no PORT_OPEN event when the host-connected flag did not change). Only the handshake keeps host
 *    connections apart then.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The stand-in's C source. */
export const PTY_PORT_SOURCE = fileURLToPath(new URL('../../test-native/pty-port.c', import.meta.url));

/** Why the virtio tests cannot run here (no C compiler for the pty helper), or false. */
export const FAKE_VIRTIO_PORT_SKIP: string | false = spawnSync('cc', ['--version']).status === 0 ? false : 'no C compiler (cc) to build the pty stand-in for a virtio port';

/**
 * Compile the pty helper into `dir`. @returns the binary's path.
 * @throws Error when the compiler fails.
 */
export function buildPtyPort(dir: string): string {
  const out = join(dir, 'pty-port');
  const r = spawnSync('cc', ['-O2', '-Wall', '-Werror', '-o', out, PTY_PORT_SOURCE], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`cc failed: ${r.stderr || r.error?.message}`);
  return out;
}

export interface FakeVirtioPortOptions {
  /** Where the link and the host socket go (the caller removes it). */
  dir: string;
  /** The compiled helper from {@link buildPtyPort}. */
  helper: string;
  /** Whether the guest learns that a host left (see the module notes). Default `seen-by-guest`. */
  disconnects?: 'seen-by-guest' | 'unseen-by-guest';
}

export interface FakeVirtioPort {
  /** The device path to give the agent (`--virtio-port`). */
  portPath: string;
  /** The host's end, as QEMU's chardev socket. */
  hostSocketPath: string;
  /** Host connections accepted so far. */
  readonly hostConnections: number;
  /** Stop: drop the host, hang up the pty, remove the socket and link. */
  close(): Promise<void>;
}

function waitExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/** Start the stand-in. Resolves once the host socket accepts connections. */
export async function startFakeVirtioPort(options: FakeVirtioPortOptions): Promise<FakeVirtioPort> {
  const portPath = join(options.dir, 'vport0p1');
  const hostSocketPath = join(options.dir, 'agent0.sock');
  const seenByGuest = (options.disconnects ?? 'seen-by-guest') === 'seen-by-guest';
  let helper: ChildProcess | undefined;
  let host: Socket | undefined;
  let hostConnections = 0;
  const helpers = new Set<ChildProcess>();

  const startHelper = (): ChildProcess => {
    const child = spawn(options.helper, [portPath], { stdio: ['pipe', 'pipe', 'inherit'] });
    helpers.add(child);
    child.once('exit', () => helpers.delete(child));
    child.stdin?.on('error', () => undefined);
    child.stdout?.on('data', (chunk: Buffer) => {
      // QEMU discards what the guest writes while no host is connected.
      if (helper === child && host && !host.destroyed) host.write(chunk);
    });
    return child;
  };

  const server = createServer((socket) => {
    if (host) {
      socket.destroy(); // One host at a time (QEMU would leave it waiting; tests never do this).
      return;
    }
    host = socket;
    hostConnections++;
    helper ??= startHelper();
    const guest = helper;
    socket.on('error', () => undefined);
    if (guest.stdin) socket.pipe(guest.stdin, { end: false });
    socket.once('close', () => {
      if (guest.stdin) socket.unpipe(guest.stdin);
      if (host === socket) host = undefined;
      if (seenByGuest && helper === guest) {
        helper = undefined;
        guest.stdin?.end(); // The helper unlinks the port and hangs the pty up.
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(hostSocketPath, () => resolve());
  });

  return {
    portPath,
    hostSocketPath,
    get hostConnections() {
      return hostConnections;
    },
    async close() {
      host?.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      helper = undefined;
      for (const child of helpers) child.stdin?.end();
      const all = [...helpers];
      const killer = setTimeout(() => all.forEach((c) => c.kill('SIGKILL')), 5000);
      await Promise.all(all.map(waitExit));
      clearTimeout(killer);
      rmSync(portPath, { force: true });
      rmSync(hostSocketPath, { force: true });
    },
  };
}
