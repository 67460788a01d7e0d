/**
 * TEST SUPPORT for the real-egress bypass suite: everything that can prove "nothing got out", gathered
 * per step: the fake internet's server and DNS logs, a packet log in the fake internet's namespace,
 * packet logs on the host behind the daemon's filter (forward: what got past enforcement; input: what
 * reached the host itself from slot veths), and a TCP+UDP listener on every host address. Test support only.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import type { FakeInternet, FakeInternetEvent } from '@ramify/network/testing';
import { flowsTo, PacketLog, type Flow } from './real-egress-support.js';

/** What reached the fake internet and the host while a step ran. */
export interface Evidence {
  events: FakeInternetEvent[];
  /** Packets that arrived in the fake internet's namespace (sources are masqueraded by the host). */
  rigFlows: Flow[];
  /** Flows from slot veths that got past the daemon's filter (host forward hook). */
  passed: Flow[];
  /** Flows from slot veths delivered to the host itself (host input hook). */
  toHost: Flow[];
  /** IPv6 packets from slot veths past the daemon's filter. */
  ipv6Passed: number;
  /** `tcp|udp <peer>` for everything that reached the host listener. */
  hostHits: string[];
}

export class EvidenceCollector {
  /** Port of the host listener (TCP and UDP, every address). */
  hostPort = 0;
  private readonly hits: string[] = [];
  private tcp: Server | undefined;
  private udp: UdpSocket | undefined;

  private constructor(private readonly rig: FakeInternet, private readonly logs: { rig: PacketLog; forward: PacketLog; input: PacketLog }) {}

  /** Start the packet logs (`<tables.*>` tables) and the host listener. `slotVeths`: the daemon's host veth pattern, e.g. `rxeh*`. */
  static async start(rig: FakeInternet, slotVeths: string, tables: { rig: string; forward: string; input: string }): Promise<EvidenceCollector> {
    const logs = {
      rig: await PacketLog.start({ table: tables.rig, netnsPath: rig.namespace.netnsPath, hook: 'prerouting' }),
      forward: await PacketLog.start({ table: tables.forward, hook: 'forward', match: `iifname "${slotVeths}"` }),
      input: await PacketLog.start({ table: tables.input, hook: 'input', match: `iifname "${slotVeths}"` }),
    };
    const collector = new EvidenceCollector(rig, logs);
    await collector.listen();
    return collector;
  }

  private async listen(): Promise<void> {
    this.tcp = createServer((socket) => {
      this.hits.push(`tcp ${socket.remoteAddress}`);
      socket.destroy();
    });
    await new Promise<void>((resolve) => this.tcp!.listen(0, '0.0.0.0', resolve));
    this.hostPort = (this.tcp.address() as { port: number }).port;
    this.udp = createSocket('udp4', (_msg, peer) => this.hits.push(`udp ${peer.address}`));
    await new Promise<void>((resolve, reject) => {
      this.udp!.once('error', reject);
      this.udp!.bind(this.hostPort, '0.0.0.0', () => resolve());
    });
  }

  /** Forget everything seen so far (call before each step). */
  async clear(): Promise<void> {
    this.rig.clearEvents();
    this.hits.length = 0;
    for (const log of Object.values(this.logs)) await log.clear();
  }

  /** Everything seen since the last {@link clear}. */
  async collect(): Promise<Evidence> {
    await this.rig.flush();
    return {
      events: this.rig.events(), rigFlows: await this.logs.rig.flows(), passed: await this.logs.forward.flows(), toHost: await this.logs.input.flows(),
      ipv6Passed: await this.logs.forward.ipv6Packets(), hostHits: [...this.hits],
    };
  }

  /** Stop the listener and delete the packet logs' tables. */
  async stop(): Promise<void> {
    this.tcp?.close();
    this.udp?.close();
    for (const log of Object.values(this.logs)) await log.stop();
  }
}

/** Nothing reached `address` (on `port`, when given): no server event, no packet in the rig, nothing past the host filter. */
export function assertNothingReached(ev: Evidence, address: string, port: number | undefined, what: string): void {
  const events = ev.events.filter((e) => 'local' in e && e.local === address && (port === undefined || e.localPort === port));
  assert.deepEqual(events, [], `${what}: the fake internet's servers logged ${address}${port ? `:${port}` : ''}`);
  assert.deepEqual(flowsTo(ev.rigFlows, address, port), [], `${what}: packets arrived in the fake internet for ${address}`);
  assert.deepEqual(flowsTo(ev.passed, address, port), [], `${what}: packets to ${address} got past the host's filter`);
}

/** Names the fake internet's DNS server was asked. */
export const dnsNames = (ev: Evidence): string[] => ev.events.flatMap((e) => (e.kind === 'dns-query' ? [e.name] : []));
