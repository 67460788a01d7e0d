/**
 * The agent's side of the channel hello (`protocol/channel-hello.ts`): the key a host must show on the
 * agent's TCP port, and the admission of each new connection. The agent starts with no key, so its TCP
 * port admits nobody until a host gave it one through the unix socket (reached only from inside the
 * sandbox: the gVisor host's `runsc exec` bridge at boot). Every later hello names the next key: a
 * restored image (a resume, each fork child) is given a key of its own at its first connection.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Socket } from 'node:net';
import { decodeHello, HELLO_ACCEPTED, HELLO_BYTES, readBytes, startsHello } from '../protocol/channel-hello.js';

/** How long a new connection may take to send its hello, ms. */
const HELLO_TIMEOUT_MS = 5000;

/** Which listener a connection came from: `tcp` checks the key, `unix` does not. */
export type ChannelTransport = 'tcp' | 'unix';

export class ChannelKey {
  #key: Buffer | null = null;

  /** Whether a key is set (the TCP port admits nobody before). */
  get isSet(): boolean {
    return this.#key !== null;
  }

  /**
   * Read and check `socket`'s hello; true when the connection may go on (the answer is sent, the socket
   * is paused at its first frame: the caller resumes it once it listens), false when it was refused (the
   * socket is destroyed). On `unix` a connection that starts with a frame is admitted as it is.
   */
  async admit(socket: Socket, transport: ChannelTransport): Promise<boolean> {
    const first = await readBytes(socket, 1, HELLO_TIMEOUT_MS);
    if (first === null) return refuse(socket);
    if (!startsHello(first[0]!)) {
      if (transport === 'tcp') return refuse(socket);
      socket.unshift(first);
      return true;
    }
    const rest = await readBytes(socket, HELLO_BYTES - 1, HELLO_TIMEOUT_MS);
    const hello = rest && decodeHello(Buffer.concat([first, rest]));
    if (!hello) return refuse(socket);
    if (transport === 'tcp' && !this.#matches(hello.key)) return refuse(socket);
    if (hello.nextKey) this.#key = hello.nextKey;
    socket.write(Buffer.of(HELLO_ACCEPTED));
    return true;
  }

  #matches(key: Buffer): boolean {
    return this.#key !== null && key.length === this.#key.length && timingSafeEqual(key, this.#key);
  }
}

function refuse(socket: Socket): false {
  socket.destroy();
  return false;
}
