/**
 * Serving host connections on a virtio-serial port (`serve --virtio-port /dev/virtio-ports/NAME`).
 *
 * What the port is (Linux drivers/char/virtio_console.c, QEMU hw/char/virtio-serial-bus.c): a character
 * device the guest opens once (a second open fails EBUSY); its host side is QEMU's chardev, here a unix
 * socket QEMU serves, which hosts connect to and leave at will. While no host is connected, read(2)
 * returns 0 at once (EOF) and poll(2) reports POLLIN|POLLHUP, so poll cannot wait for a host: like
 * qemu-guest-agent, the agent polls with a timer (`pollMs`). Once a host is connected, a non-blocking
 * read returns EAGAIN or data. When the host disconnects, QEMU discards what the guest wrote that the
 * host had not taken and the guest reads the rest of its input and then EOF; a non-blocking write
 * returns EAGAIN while no host is connected. Closing the fd discards unread input.
 *
 * The loop: open (retrying ENOENT/EBUSY/ENXIO: the port may appear late or a previous agent may still
 * hold it) -> poll until a host is there -> stream the fd on the event loop (`char-device-stream.ts`)
 * under a `HostLink` (handshake, one fresh protocol connection per host connection) -> on EOF, look at
 * the port for a second: when a host is there again (the EOF was stale: the guest kernel applies
 * "host left"/"host came" out of order with the data, so after a restore the agent can read the old
 * host's leaving after the new host's HELLO), go on reading the same fd with the same session;
 * otherwise close the fd, which drops the old connection's unread input and unsent output, and start
 * over. Never close the fd while a host is connected: the kernel discards a port's unread input on close. Processes, output
 * rings and files live in the process table and outlive all of this, as with socket reconnects.
 * When the path is `/dev/virtio-ports/NAME` and no udev made that link, the port is found by its name in
 * `/sys/class/virtio-ports/<vportXpY>/name`.
 */
import { closeSync, constants, existsSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Duplex } from 'node:stream';
import { continueCharDeviceStream, openCharDeviceStream } from './char-device-stream.js';
import { HostLink, type ContinuedPort } from './host-link.js';

/** How often to look for a host (or for the device) while there is none, by default (ms). */
export const DEFAULT_VIRTIO_POLL_MS = 50;
/** How long after an EOF a host may show up again on the same fd before the fd is closed (ms). */
const EOF_GRACE_MS = 1000;
/** How long to wait for writes queued before an EOF to leave before going on with the same fd (ms). */
const DRAIN_BEFORE_CONTINUE_MS = 5000;
const CONTINUE_PROBE_MS = 10;
/** A gap this long between two EOF probes means the guest did not get to run meanwhile (ms): the grace starts over. */
const FROZEN_GAP_MS = 250;

const PROBE_BYTES = 64 * 1024;
let probeBuffer: Buffer | undefined;

export interface VirtioPortOptions {
  /** The port's device path, e.g. `/dev/virtio-ports/org.ramify.agent0`. */
  path: string;
  /** How often to look for a host or the device while there is none (ms); default {@link DEFAULT_VIRTIO_POLL_MS}. */
  pollMs?: number;
  /** See `HostLinkOptions.stallMs`. */
  stallMs?: number;
}

export interface VirtioPortServer {
  /** Whether a host connection is being served now. */
  readonly connected: boolean;
  /** Stop serving: end the current connection and close the device. */
  close(): Promise<void>;
}

/** What a non-blocking read tells about the host side of an open port. */
export type HostProbe = { host: 'absent' } | { host: 'present'; initial?: Buffer } | { host: 'error'; code: string };

/**
 * Look at an open, non-blocking port once: 0 bytes means no host is connected, EAGAIN means one is and
 * it sent nothing yet, data means one is (the bytes are returned; the caller must feed them on).
 */
export function probeHost(fd: number): HostProbe {
  probeBuffer ??= Buffer.allocUnsafe(PROBE_BYTES);
  const buffer = probeBuffer;
  for (;;) {
    try {
      const n = readSync(fd, buffer, 0, buffer.byteLength, null);
      return n === 0 ? { host: 'absent' } : { host: 'present', initial: Buffer.from(buffer.subarray(0, n)) };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'EIO';
      if (code === 'EINTR') continue;
      return code === 'EAGAIN' || code === 'EWOULDBLOCK' ? { host: 'present' } : { host: 'error', code };
    }
  }
}

/** `path` itself, or the `/dev/vportXpY` whose sysfs name matches a missing `/dev/virtio-ports/NAME`. */
export function resolvePortPath(path: string, sysfsDir = '/sys/class/virtio-ports'): string {
  if (existsSync(path) || dirname(path) !== '/dev/virtio-ports') return path;
  const name = basename(path);
  let entries: string[];
  try {
    entries = readdirSync(sysfsDir);
  } catch {
    return path;
  }
  for (const entry of entries) {
    try {
      if (readFileSync(join(sysfsDir, entry, 'name'), 'utf8').trim() === name) return join('/dev', entry);
    } catch {
      // No name attribute (a console port) or gone.
    }
  }
  return path;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Serve host connections on the port at `options.path` until closed; each host connection's stream is
 * passed to `startSession`. Never throws: problems are logged and retried every `pollMs`.
 */
export function serveVirtioPort(options: VirtioPortOptions, startSession: (channel: Duplex) => void, log: (line: string) => void): VirtioPortServer {
  const pollMs = options.pollMs ?? DEFAULT_VIRTIO_POLL_MS;
  let stopped = false;
  let link: HostLink | undefined;
  let wake: (() => void) | undefined;
  let lastProblem = '';
  const problem = (text: string): void => {
    if (text !== lastProblem) log(`virtio: ${text} (retrying every ${pollMs} ms)`);
    lastProblem = text;
  };
  const pause = (): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(done, pollMs);
      function done(): void {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  /** Open the port and wait for a host. @returns the fd and any bytes already read, or undefined to retry. */
  async function openWithHost(): Promise<{ fd: number; initial?: Buffer } | undefined> {
    const path = resolvePortPath(options.path);
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDWR | constants.O_NONBLOCK | constants.O_NOCTTY);
    } catch (err) {
      problem(`cannot open ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
      return undefined;
    }
    while (!stopped) {
      const probe = probeHost(fd);
      if (probe.host === 'present') {
        lastProblem = '';
        return { fd, initial: probe.initial };
      }
      if (probe.host === 'error') {
        problem(`reading ${path} failed: ${probe.code}`);
        break;
      }
      await pause();
    }
    closeSync(fd);
    return undefined;
  }

  /**
   * After an EOF on `fd`: a stream going on with it when a host is there within {@link EOF_GRACE_MS} of
   * running time (and the writes queued before the EOF have left), else undefined (the link ends and the
   * fd is closed). Time the guest was starved of CPU does not count.
   */
  async function continueAfterEof(fd: number, ended: Socket): Promise<ContinuedPort | undefined> {
    let deadline = performance.now() + EOF_GRACE_MS;
    let lastProbeAt = performance.now();
    for (;;) {
      if (stopped) return undefined;
      const now = performance.now();
      // A long gap between two 10 ms probes: the guest's clock ran while it did not get to run (a loaded
      // host starving the VM's vCPUs). The kernel's "host came" event waits for the same CPUs: the
      // grace starts over.
      if (now - lastProbeAt > FROZEN_GAP_MS) deadline = now + EOF_GRACE_MS;
      lastProbeAt = now;
      const probe = probeHost(fd);
      if (probe.host === 'error') return undefined;
      if (probe.host === 'present') {
        const drainDeadline = performance.now() + DRAIN_BEFORE_CONTINUE_MS;
        while (ended.writableLength > 0 && !ended.destroyed && performance.now() < drainDeadline) await sleep(CONTINUE_PROBE_MS);
        if (ended.writableLength > 0 || ended.destroyed || stopped) return undefined;
        log('virtio: the port read EOF but a host is connected: going on with the same connection');
        return { port: continueCharDeviceStream(ended), initial: probe.initial };
      }
      if (performance.now() >= deadline) return undefined;
      await sleep(CONTINUE_PROBE_MS);
    }
  }

  /** One open-serve-close round. */
  async function serveOnce(): Promise<void> {
    const opened = await openWithHost();
    if (!opened) {
      if (!stopped) await pause();
      return;
    }
    let port: Socket;
    try {
      port = openCharDeviceStream(opened.fd);
    } catch (err) {
      closeSync(opened.fd);
      problem(`cannot stream ${options.path}: ${(err as Error).message}`);
      await pause();
      return;
    }
    const fd = opened.fd;
    // `ended` is the link's current port: the first one, or one continued after an earlier stale EOF (every
    // port of this fd is a Socket from char-device-stream.ts).
    link = new HostLink(port, { startSession, stallMs: options.stallMs, log, onPortEnd: (ended) => continueAfterEof(fd, ended as Socket) }, opened.initial);
    await link.closed;
    link = undefined;
  }

  const loop = (async () => {
    while (!stopped) {
      try {
        await serveOnce();
      } catch (err) {
        problem(`unexpected error: ${(err as Error).stack ?? String(err)}`);
        await pause();
      }
    }
  })();

  return {
    get connected() {
      return link?.connected ?? false;
    },
    async close() {
      stopped = true;
      link?.close();
      wake?.();
      await loop;
    },
  };
}
