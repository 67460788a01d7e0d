/**
 * `UpstreamPool`: the ingress's idle keep-alive connections into sandboxes. One Node `http.Agent`
 * (`keepAlive`) per target, a target being (sandbox id, port, slot address): Node does the pooling (LIFO
 * reuse, the free list, `maxFreeSockets`, closing a free socket at its idle timeout, honouring a server's
 * `Keep-Alive: timeout=N` hint); this module only says where a connection comes from (the dialer, async)
 * and when a target's pool must go.
 *
 * An idle pooled connection is an established TCP endpoint inside the sandbox, and gVisor cannot
 * checkpoint one (see docs/design/RUNTIME-GVISOR.md). So a target's agent is *retired* before a checkpoint
 * ({@link UpstreamPool.drain}) and whenever its sandbox leaves `running` ({@link UpstreamPool.retire}): its
 * idle sockets are closed, and a socket still serving a request is closed once its response is done,
 * never pooled again. The next request builds a new agent, and so new connections: no socket is reused
 * across a pause, and a fork (another sandbox id, another slot address) never shares its parent's.
 * While a sandbox is {@link UpstreamPool.drain}ed (a checkpoint waits for its connections to close), its
 * requests get one-shot connections, until {@link UpstreamPool.allow} (it runs again).
 *
 * Lifecycle: `new` → `agentFor()` any number of times → `close()`.
 */
import { Agent } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** Where a proxied request goes. */
export interface UpstreamTarget {
  sandboxId: string;
  port: number;
  /** The sandbox's slot address now (a sandbox may be given another slot when it resumes). */
  slotAddress: string;
}

export interface UpstreamPoolOptions {
  /** Open a connection to the target (through the ingress dialer). Rejects with the dial's error. */
  dial: (target: UpstreamTarget) => Promise<Socket>;
  /** At most this many idle connections per target (more are closed when freed); default 16. */
  maxIdlePerTarget?: number;
  /**
   * An idle connection is closed after this long, ms; default 4000 (under the 5 s keep-alive of Node's
   * and uvicorn's servers; a shorter `Keep-Alive: timeout=N` announced by the server wins).
   */
  idleTimeoutMs?: number;
}

/** An agent whose connections come from the dialer; once retired it pools nothing more. */
class DialedAgent extends Agent {
  #retired = false;

  constructor(
    private readonly target: UpstreamTarget,
    private readonly dial: (target: UpstreamTarget) => Promise<Socket>,
    options: { keepAlive: boolean; maxFreeSockets: number; timeout: number },
  ) {
    super({ ...options, scheduling: 'lifo' });
  }

  /** Node's async form: return nothing, hand the socket (or the dial's error) to `callback`. */
  override createConnection(_options: unknown, callback?: (err: Error | null, socket: Duplex) => void): undefined {
    this.dial(this.target).then(
      (socket) => {
        socket.setNoDelay(true);
        callback?.(null, socket);
      },
      (err: Error) => callback?.(err, undefined as unknown as Duplex),
    );
    return undefined;
  }

  override keepSocketAlive(socket: Duplex): boolean {
    if (this.#retired) return false;
    // Node's returns whether the socket may be kept (false when the server's keep-alive hint is too short);
    // its type says void.
    const keep: unknown = super.keepSocketAlive(socket);
    return keep !== false;
  }

  override reuseSocket(socket: Duplex, request: Parameters<Agent['reuseSocket']>[1]): void {
    super.reuseSocket(socket, request);
    // The idle timeout was for the free list; a request may take as long as it takes.
    (socket as Socket).setTimeout(0);
  }

  /** Close the idle sockets; sockets in use are closed when their response is done. @returns idle sockets closed. */
  retire(): number {
    this.#retired = true;
    let closed = 0;
    for (const sockets of Object.values(this.freeSockets)) {
      for (const socket of sockets ?? []) {
        socket.destroy();
        closed += 1;
      }
    }
    return closed;
  }

  /** Idle sockets now. */
  idle(): number {
    return Object.values(this.freeSockets).reduce((n, sockets) => n + (sockets?.length ?? 0), 0);
  }
}

const ONE_SHOT = { keepAlive: false, maxFreeSockets: 1, timeout: 0 };

export class UpstreamPool {
  private readonly options: Required<Pick<UpstreamPoolOptions, 'maxIdlePerTarget' | 'idleTimeoutMs'>> & Pick<UpstreamPoolOptions, 'dial'>;
  /** Live agents per sandbox id, then per `port slotAddress`. */
  private readonly agents = new Map<string, Map<string, DialedAgent>>();
  /** Sandboxes whose checkpoint waits for connections to close: nothing of theirs is pooled. */
  private readonly drained = new Set<string>();

  constructor(options: UpstreamPoolOptions) {
    this.options = { dial: options.dial, maxIdlePerTarget: options.maxIdlePerTarget ?? 16, idleTimeoutMs: options.idleTimeoutMs ?? 4000 };
  }

  /**
   * The agent for a request to `target`: pooled (keep-alive), or while the sandbox is drained one-shot (a
   * new connection, closed after the response).
   */
  agentFor(target: UpstreamTarget): Agent {
    const { dial, maxIdlePerTarget, idleTimeoutMs } = this.options;
    if (this.drained.has(target.sandboxId)) return new DialedAgent(target, dial, ONE_SHOT);
    let forSandbox = this.agents.get(target.sandboxId);
    if (!forSandbox) this.agents.set(target.sandboxId, (forSandbox = new Map()));
    const key = `${target.port} ${target.slotAddress}`;
    let agent = forSandbox.get(key);
    if (!agent) forSandbox.set(key, (agent = new DialedAgent(target, dial, { keepAlive: true, maxFreeSockets: maxIdlePerTarget, timeout: idleTimeoutMs })));
    return agent;
  }

  /** A one-shot agent over `socket`, already dialed to `target` (a WebSocket upgrade: its socket never returns to a pool). */
  agentWith(target: UpstreamTarget, socket: Socket): Agent {
    return new DialedAgent(target, () => Promise.resolve(socket), ONE_SHOT);
  }

  /**
   * Retire the sandbox's agents (idle sockets closed, sockets in use not pooled again) and pool nothing of
   * it until {@link allow}: called before a checkpoint. @returns idle sockets closed.
   */
  drain(sandboxId: string): number {
    this.drained.add(sandboxId);
    return this.retire(sandboxId);
  }

  /** The sandbox runs again (resumed, or its checkpoint was refused): its connections may be pooled. */
  allow(sandboxId: string): void {
    this.drained.delete(sandboxId);
  }

  /** Retire the sandbox's agents (it left `running`: paused, killed). @returns idle sockets closed. */
  retire(sandboxId: string): number {
    const forSandbox = this.agents.get(sandboxId);
    this.agents.delete(sandboxId);
    let closed = 0;
    for (const agent of forSandbox?.values() ?? []) closed += agent.retire();
    return closed;
  }

  /** Idle pooled connections into `sandboxId` now. */
  idleCount(sandboxId: string): number {
    let idle = 0;
    for (const agent of this.agents.get(sandboxId)?.values() ?? []) idle += agent.idle();
    return idle;
  }

  /** Close every pooled connection (the ingress is closing). */
  close(): void {
    for (const sandboxId of [...this.agents.keys()]) this.retire(sandboxId);
    this.drained.clear();
  }
}
