/**
 * How the host reaches the agent of a gVisor sandbox (docs/design/RUNTIME-GVISOR.md, "The agent channel"):
 * - **TCP** (the fast path): the agent listens on a TCP port in the sandbox's own network stack
 *   (`serve --tcp-port`), a listener that survives every checkpoint. The host dials the sandbox's slot
 *   address with the daemon's agent dialer (a helper process of a dedicated uid: the host firewall lets
 *   no other socket reach that port, and no other sandbox or outside host) and sends the channel hello
 *   with the key the agent holds. No process starts: ~5 ms to connect after a restore.
 * - **the bridge** (the fallback): `runsc exec` of socat to the agent's unix socket (150-300 ms, up to
 *   1.3 s eight at once). Used at boot (the agent has no key yet, the bridge gives it one), for images
 *   whose agent has no TCP port (made before it), without a dialer, and whenever the TCP path fails.
 *
 * Keys: 32 random bytes per incarnation. The agent of a restored image holds the key the image was made
 * with (the stamp records it); the first hello names the incarnation's own key, so each fork child and each
 * resume has its own after its first connection, and the parent's key (in every child's memory) opens no
 * other sandbox. A hello over the bridge sets the key unchecked (the unix socket is reached only from
 * inside the sandbox). Keys live in the runtime's instance file and in images, both root's only.
 */
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { CHANNEL_KEY_BYTES, encodeHello, HELLO_ACCEPTED, markHelloAnswered, readBytes, type ChannelHello } from '@ramify/agent';
import { RamifyError } from '@ramify/contracts';

/** How long the agent may take to answer a hello, ms (eight restores at once on 2 cores: up to ~0.4 s measured). */
const HELLO_ANSWER_TIMEOUT_MS = 5000;

/** The agent's side of an incarnation, as the instance file keeps it. */
export interface InstanceAgent {
  /** The agent's TCP port inside the sandbox. */
  tcpPort: number;
  /** This incarnation's key (hex): what the agent holds once a hello named it. */
  key: string;
  /** Keys (hex) the agent may hold now: the image's until a hello was answered, then `[key]`; empty before the first key. */
  mayHold: string[];
}

/** What an image's stamp records of its agent: its port and the keys it may hold. */
export interface ImageAgent {
  tcpPort: number;
  keys: string[];
}

/** Dial `host:port` from the host as the agent dialer's uid; rejects with the connect's error. */
export type AgentDialer = (host: string, port: number) => Promise<Socket>;

const newKey = (): string => randomBytes(CHANNEL_KEY_BYTES).toString('hex');

/** The agent of a booted sandbox: listening on `--tcp-port N` when its argv says so, with no key yet. */
export function bootedAgent(argv: readonly string[]): InstanceAgent | undefined {
  const i = argv.indexOf('--tcp-port');
  const port = i >= 0 ? Number(argv[i + 1]) : NaN;
  return Number.isInteger(port) && port > 0 && port < 65536 ? { tcpPort: port, key: newKey(), mayHold: [] } : undefined;
}

/** The agent of an incarnation restored from an image whose stamp recorded `image`: a key of its own. */
export function restoredAgent(image: ImageAgent | undefined): InstanceAgent | undefined {
  return image ? { tcpPort: image.tcpPort, key: newKey(), mayHold: [...image.keys] } : undefined;
}

/** What an image of this incarnation records of its agent. */
export function imageAgent(agent: InstanceAgent | undefined): ImageAgent | undefined {
  return agent ? { tcpPort: agent.tcpPort, keys: [...agent.mayHold] } : undefined;
}

export interface OpenChannelDeps {
  /** The daemon's agent dialer; absent: the bridge only. */
  dial?: AgentDialer;
  /** Start the bridge (`runsc exec` of socat to the agent's unix socket). */
  bridge: () => Duplex;
  /** Persist the instance after `agent.mayHold` changed (a restarted daemon must know the key). */
  persist: () => Promise<void>;
  /** Told why the TCP path was not taken (it fell back to the bridge). */
  onFallback?: (reason: string) => void;
}

/**
 * A byte stream to the agent positioned at its first frame: over TCP to `slotAddress` when the agent has
 * a port and may hold a key the host knows, else (or when that fails) over the bridge. Updates `agent`.
 * The stream is marked `markHelloAnswered` when the agent answered its hello (then no first ping is sent).
 * @throws RamifyError `AGENT_UNREACHABLE` when the bridge's hello is not answered (the agent is not up yet).
 */
export async function openChannel(slotAddress: string, agent: InstanceAgent | undefined, deps: OpenChannelDeps): Promise<Duplex> {
  if (agent && deps.dial && agent.mayHold.length > 0) {
    const reasons: string[] = [];
    for (const key of [...agent.mayHold]) {
      let socket: Socket;
      try {
        socket = await deps.dial(slotAddress, agent.tcpPort);
      } catch (err) {
        // Not a key's fault: the next key would meet the same.
        reasons.push(err instanceof Error ? err.message : String(err));
        break;
      }
      // Until the agent client takes the socket over, a reset must not be an unhandled 'error'.
      socket.on('error', () => undefined);
      try {
        if (!agent.mayHold.includes(agent.key)) agent.mayHold.push(agent.key);
        if (await exchangeHello(socket, { key: Buffer.from(key, 'hex'), nextKey: Buffer.from(agent.key, 'hex') })) {
          agent.mayHold = [agent.key];
          await deps.persist();
          markHelloAnswered(socket);
          return socket;
        }
        reasons.push('the agent refused the key');
      } catch (err) {
        reasons.push(err instanceof Error ? err.message : String(err));
      }
      socket.destroy();
    }
    deps.onFallback?.(`TCP to ${slotAddress}:${agent.tcpPort}: ${[...new Set(reasons)].join('; ')}`);
  } else if (agent && deps.dial) {
    deps.onFallback?.('the agent holds no key yet');
  }
  const stream = deps.bridge();
  if (!agent) return stream;
  // An unanswered hello here changes nothing the next bridge would not set again: `mayHold` names only
  // keys the agent was seen to hold, so that no TCP dial races an agent still starting (see the docs).
  if (!(await exchangeHello(stream, { key: Buffer.alloc(CHANNEL_KEY_BYTES), nextKey: Buffer.from(agent.key, 'hex') }))) {
    stream.destroy();
    throw new RamifyError('AGENT_UNREACHABLE', 'the agent did not answer the channel hello over the bridge');
  }
  agent.mayHold = [agent.key];
  await deps.persist();
  markHelloAnswered(stream);
  return stream;
}

/**
 * Send a hello on `stream` and read the agent's one-byte answer: true when accepted (the stream is left
 * paused at the agent's first frame), false when the stream ended, failed or stayed silent.
 */
async function exchangeHello(stream: Duplex, hello: ChannelHello): Promise<boolean> {
  stream.write(encodeHello(hello));
  const answer = await readBytes(stream, 1, HELLO_ANSWER_TIMEOUT_MS);
  return answer?.[0] === HELLO_ACCEPTED;
}
