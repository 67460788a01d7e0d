/**
 * `ssh -L`: direct-tcpip channels to a port of the sandbox. The connection is made the way the ingress
 * makes its own (docs/design/INGRESS.md): to the sandbox's slot address, by a dialer process whose uid
 * the ingress firewall lets through, and before a gVisor checkpoint every such connection into the
 * sandbox is closed (an established connection would block it; the client's next one wakes the
 * sandbox). A server that listens on loopback only cannot be reached at the slot address: its
 * connections go through a relay started inside the sandbox instead (`socat`, which every template has),
 * over the agent, and do not hold checkpoints up. Destinations other than the sandbox itself are refused.
 */
import type { Socket } from 'node:net';
import { AGENT_TCP_PORT } from '@ramify/contracts';
import { hostnameFor, sandboxListeners, type Core } from '@ramify/core';
import { DialError, slotAddresses, type IngressDialer, type SlotLayout } from '@ramify/network';
import type { AcceptConnection, RejectConnection, ServerChannel, TcpipRequestInfo } from 'ssh2';
import { bridgeProcess } from './process-channel.js';
import type { SshScope } from './scope.js';

/** Destination hosts that mean "the sandbox itself" (plus its host name). */
const SELF = new Set(['localhost', '127.0.0.1', '::1', '0.0.0.0', '::', 'ip6-localhost']);

/** The direct-tcpip channels of a gateway, by sandbox, so a checkpoint can close them. */
export class Forwards {
  readonly #open = new Map<string, Set<Socket>>();

  constructor(private readonly dialer: IngressDialer, private readonly layout: SlotLayout) {}

  /** Close every dialed connection into `sandboxId` (before its checkpoint). @returns how many. */
  dropFor(sandboxId: string): number {
    const sockets = this.#open.get(sandboxId);
    if (!sockets) return 0;
    for (const socket of sockets) socket.destroy();
    this.#open.delete(sandboxId);
    return sockets.size;
  }

  /** Answer one direct-tcpip request of an authenticated connection. */
  async open(scope: SshScope, info: TcpipRequestInfo, accept: AcceptConnection<ServerChannel>, reject: RejectConnection): Promise<void> {
    const { core, sandboxId } = scope;
    const port = info.destPort;
    if (!(SELF.has(info.destIP.toLowerCase()) || info.destIP.toLowerCase() === hostnameFor(sandboxId)) || !Number.isInteger(port) || port < 1 || port > 65535 || port === AGENT_TCP_PORT) {
      core.logger.info('ssh: refused a forward to another host or the agent port', { sandboxId, dest: `${info.destIP}:${port}` });
      return reject();
    }
    let socket: Socket;
    try {
      const record = await scope.ensureRunning();
      if (record.slot === null) return reject();
      socket = await this.dialer.dial(slotAddresses(this.layout, record.slot).slotAddress, port);
    } catch (err) {
      if (err instanceof DialError && err.code === 'ECONNREFUSED' && (await sandboxListeners(core, sandboxId, port).catch(() => 'none')) === 'loopback-only') {
        return relay(core, sandboxId, port, accept);
      }
      core.logger.info('ssh: a forward could not connect', { sandboxId, port, error: err instanceof Error ? err.message : String(err) });
      return reject();
    }
    const channel = accept();
    if (!channel) return void socket.destroy();
    this.#track(sandboxId, socket);
    socket.setNoDelay(true);
    channel.on('error', () => socket.destroy());
    socket.on('error', () => channel.destroy());
    channel.on('close', () => socket.destroy());
    socket.on('close', () => channel.destroy());
    socket.pipe(channel).pipe(socket);
    socket.resume();
  }

  #track(sandboxId: string, socket: Socket): void {
    let sockets = this.#open.get(sandboxId);
    if (!sockets) this.#open.set(sandboxId, (sockets = new Set()));
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0 && this.#open.get(sandboxId) === sockets) this.#open.delete(sandboxId);
    });
  }
}

/** A loopback-only server's connection: `socat` in the sandbox, its stdin and stdout the channel. */
async function relay(core: Core, sandboxId: string, port: number, accept: AcceptConnection<ServerChannel>): Promise<void> {
  const channel = accept();
  if (!channel) return;
  try {
    await bridgeProcess(core, sandboxId, channel, { kind: 'command', cmd: `exec socat - TCP:127.0.0.1:${port}`, envs: {} }, { stderr: 'drop', exit: 'none' });
  } catch (err) {
    core.logger.info('ssh: a loopback relay could not start', { sandboxId, port, error: err instanceof Error ? err.message : String(err) });
    channel.destroy();
  }
}
