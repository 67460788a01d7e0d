/**
 * Host side of the agent channel of a microVM: the guest agent serves a virtio-serial port
 * (`serve --virtio-port /dev/virtio-ports/org.ramify.agent0`) whose host end is a unix socket QEMU serves:
 *   -device virtio-serial-pci -chardev socket,id=agent0,path=SOCK,server=on,wait=off
 *   -device virtserialport,chardev=agent0,name=org.ramify.agent0
 * Connect to SOCK with {@link openVirtioChannel} (or {@link connectVirtioAgent}), never with a bare
 * `net.connect`: every connection must open with the hello/ack handshake (`protocol/virtio-handshake.ts`)
 * so that the agent starts a fresh protocol connection even when it could not see the previous host leave
 * (a restore into a new QEMU process), and so that stale bytes of an earlier connection are skipped.
 * QEMU's chardev takes one host at a time: close the previous channel before opening the next.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { RamifyError } from '@ramify/contracts';
import { encodeMarker, MarkerScanner, NONCE_BYTES } from '../protocol/virtio-handshake.js';
import { connectAgent, type AgentClient, type ConnectAgentOptions } from './agent-client.js';

export interface VirtioChannelOptions {
  /** Give up after this long (ms); default 30000. Covers QEMU starting and the guest booting. */
  timeoutMs?: number;
  /** Repeat the HELLO this long after the first one when no ACK came (ms); default 1000. */
  firstRetryMs?: number;
  /**
   * Then repeat it this often (ms); default 6000. Keep it above the agent's `--virtio-stall-ms` (default
   * 5000): a guest restored with half a frame of an earlier host in its input drops that frame only
   * after its bytes stop coming for that long, and swallows any HELLO sent before.
   */
  retryMs?: number;
  /**
   * Give up on a connection that got no ACK this long after its first HELLO and connect again (ms);
   * default 7000 (after the HELLO at 1 s, before the one at 7 s). Reconnecting makes QEMU tell the
   * guest "host left", then "host came": a guest that missed a "host came" (restored while its events
   * were in flight) takes its port for unconnected and cannot write the ACK until it hears one.
   * Like `retryMs`, keep it above the agent's stall bound.
   */
  reconnectAfterMs?: number;
  /**
   * A socket already connected to the port's socket (e.g. one the runtime held across a restore so the
   * guest never saw the host leave): the first handshake runs on it; it is owned (destroyed on failure).
   */
  connected?: Socket;
}

type Outcome = 'acknowledged' | 'closed' | 'timeout';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function connectOnce(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/**
 * Send HELLOs until the matching ACK arrives (leave the bytes after it unread on the paused socket), the
 * socket closes, or `reconnectAfterMs` / the deadline passes (`timeout`: the caller connects again).
 */
function handshake(socket: Socket, deadline: number, options: VirtioChannelOptions): Promise<Outcome> {
  return new Promise((resolve) => {
    const nonce = randomBytes(NONCE_BYTES);
    const hello = encodeMarker('hello', nonce);
    const scanner = new MarkerScanner('ack', nonce);
    const send = (): void => {
      if (!socket.destroyed) socket.write(hello);
    };
    let retry = setTimeout(function again() {
      send();
      retry = setTimeout(again, options.retryMs ?? 6000);
    }, options.firstRetryMs ?? 1000);
    const attemptDeadline = Math.min(deadline, Date.now() + (options.reconnectAfterMs ?? 7000));
    const giveUp = setTimeout(() => finish('timeout'), Math.max(0, attemptDeadline - Date.now()));
    const onData = (chunk: Buffer): void => {
      const found = scanner.push(chunk); // Everything before our ACK is an earlier connection's: dropped.
      if (!found) return;
      finish('acknowledged');
      socket.pause();
      if (found.rest.byteLength) socket.unshift(found.rest);
    };
    const onClose = (): void => finish('closed');
    function finish(outcome: Outcome): void {
      clearTimeout(retry);
      clearTimeout(giveUp);
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve(outcome);
    }
    socket.on('data', onData);
    socket.on('close', onClose);
    socket.resume(); // A socket handed in paused (`connected`) would not flow for a data listener alone.
    send();
  });
}

/**
 * Connect to the agent's virtio-serial port through QEMU's chardev socket at `socketPath` and complete
 * the handshake. Retries while the socket is missing or refused (QEMU starting) or QEMU drops the
 * connection, and connects again when a connection got no ACK within `reconnectAfterMs`. Resolves
 * with the connected socket, paused (explicitly: a `data` listener alone does not start it, call
 * `resume()`; `connectAgent` does) and positioned at the agent's first frame. A no-op `error` listener
 * stays attached (errors also end in `close`).
 * @throws RamifyError AGENT_UNREACHABLE when no ACK came within `timeoutMs`.
 */
export async function openVirtioChannel(socketPath: string, options: VirtioChannelOptions = {}): Promise<Socket> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  let why = 'no answer';
  let held = options.connected;
  while (Date.now() < deadline) {
    let socket: Socket;
    try {
      socket = held && !held.destroyed ? held : await connectOnce(socketPath);
      held = undefined;
    } catch (err) {
      why = `connect: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
      await sleep(50);
      continue;
    }
    socket.on('error', () => undefined);
    const outcome = await handshake(socket, deadline, options);
    if (outcome === 'acknowledged') return socket;
    socket.destroy();
    why = outcome === 'closed' ? 'QEMU closed the connection' : 'no handshake answer (agent not running, or another host still connected?)';
    if (outcome === 'closed') await sleep(50);
  }
  throw new RamifyError('AGENT_UNREACHABLE', `agent on virtio socket ${socketPath} unreachable within ${timeoutMs} ms: ${why}`);
}

/**
 * {@link openVirtioChannel} then `connectAgent` (which pings).
 * @throws RamifyError AGENT_UNREACHABLE when the handshake or the ping fails.
 */
export async function connectVirtioAgent(socketPath: string, options: VirtioChannelOptions & ConnectAgentOptions = {}): Promise<AgentClient> {
  return connectAgent(await openVirtioChannel(socketPath, options), options);
}
