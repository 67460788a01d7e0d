/**
 * Host connections to a restoring microVM's agent port, made before its device state loads.
 *
 * Why: QEMU's virtio-serial compares, after loading device state, whether a host was connected to the
 * port when the checkpoint was taken with whether one is connected now, and tells the guest about a
 * difference with a control event (hw/char/virtio-serial-bus.c, `virtio_serial_post_load_timer_cb`).
 * When the daemon only connects after the restore, the guest gets "host left" then "host came", and the
 * guest kernel handles those control events on a work queue, out of order with the data queue: under
 * load the agent read the new host's HELLO first and the stale "host left" (EOF) after it, ended the
 * fresh session and closed the port, discarding the next request (the conformance case "ten
 * pause/resume cycles" failed AGENT_UNREACHABLE). Connecting before `migrate-incoming` means the host
 * is connected on both sides of the restore, no event is sent, and the handshake alone separates the old
 * host connection from the new one (the `unseen-by-guest` case of the agent's tests).
 *
 * The held socket is paused (the guest's stale output waits in it and is skipped by the handshake) and
 * handed to the first `openAgentChannel` of the sandbox.
 */
import { connect, type Socket } from 'node:net';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class HeldAgentSockets {
  private readonly sockets = new Map<string, Socket>();

  /**
   * Connect to the agent socket at `path` of QEMU that is starting and hold the connection for
   * `sandboxId`, replacing (and closing) any held before. Retries while the socket is missing or refuses
   * for up to `timeoutMs` (default 10000).
   * @throws Error naming the path and the last error when no connection was made in time.
   */
  async hold(sandboxId: string, path: string, timeoutMs = 10_000): Promise<void> {
    this.release(sandboxId);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const socket = await connectPaused(path);
        socket.on('error', () => undefined);
        this.sockets.set(sandboxId, socket);
        return;
      } catch (err) {
        if (Date.now() >= deadline) throw new Error(`cannot connect to the agent socket ${path}: ${(err as Error).message}`);
        await sleep(20);
      }
    }
  }

  /** The held connection of `sandboxId`, if it is still open; it is no longer held (the caller owns it). */
  take(sandboxId: string): Socket | undefined {
    const socket = this.sockets.get(sandboxId);
    this.sockets.delete(sandboxId);
    return socket && !socket.destroyed ? socket : undefined;
  }

  /** Close the held connection of `sandboxId`, if any. */
  release(sandboxId: string): void {
    this.take(sandboxId)?.destroy();
  }
}

function connectPaused(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    socket.pause();
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}
