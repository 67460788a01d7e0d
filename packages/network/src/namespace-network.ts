/**
 * `NamespaceNetwork`: the fork-friendly per-sandbox network of RUNTIME-GVISOR.md.
 *
 *   [sandbox netns `<p>-s<slot>`]  eth0 = guest address (same in every sandbox)
 *         | veth
 *   [router netns `<p>-r<slot>`]   gateway address; SNAT guest → slot address, DNAT slot → guest;
 *         |                        drops anything from the sandbox whose source is not the guest address
 *         | veth  (`<p>h<slot>` in the host, slot /30)
 *   [host]                         one nftables table `<p>`: forward + masquerade of the slot range
 *
 * The router's anti-spoofing lives outside the host's nftables state (a host `nft flush ruleset` leaves it): every
 * packet reaching the host from a slot carries its slot address, which the egress route guard relies on.
 *
 * Setup costs ~6 process spawns (~50 ms). Every call is idempotent: `attach` on an existing slot
 * repairs it (runsc strips the guest address from eth0 when it takes the interface over).
 */
import { existsSync, statfsSync } from 'node:fs';
import { mkdir, open, readdir, rm, writeFile } from 'node:fs/promises';
import { RamifyError } from '@ramify/contracts';
import type { NetworkAttachment, SandboxNetwork, SlotTraffic } from '@ramify/core';
import { removeRouteGuard } from './egress/nft/route-guard.js';
import { removeAgentFirewall } from './agent-channel/firewall.js';
import { removeIngressFirewall } from './ingress/firewall.js';
import { run, runChecked } from './exec.js';
import { layoutForPrefix, slotAddresses, slotRange, type SlotLayout } from './slots.js';

export interface NamespaceNetworkOptions {
  /** Name prefix of every namespace, interface and the host nftables table (≤ 4 chars). Default `rmf`. */
  prefix?: string;
  /** Addresses; default {@link layoutForPrefix}(prefix): each prefix has its own slot range. */
  layout?: SlotLayout;
  /**
   * Makes the host's nftables table instead of the plain one below (open forwarding + masquerade), e.g.
   * an `NftEgressEnforcer` for this prefix, whose table carries forwarding and masquerade too.
   */
  hostFirewall?: { install(): Promise<void>; uninstall(): Promise<void> };
}

const NETNS_DIR = '/var/run/netns';
/** statfs(2) `f_type` of nsfs (linux/magic.h): a live namespace file is a bind mount of a namespace. */
const NSFS_MAGIC = 0x6e736673;

/**
 * Whether `path` is a live namespace file: a mount of nsfs (`ip netns add` bind-mounts the namespace on it).
 * An empty file left behind is not: after the mount namespace holding the bind mount went away (a daemon
 * started in its own mount namespace), or a reboot when /run/netns is on a disk. One statfs, no spawn.
 */
export function isLiveNamespace(path: string): boolean {
  try {
    return statfsSync(path).type === NSFS_MAGIC;
  } catch {
    return false;
  }
}
/** Markers of completely built slots (tmpfs: gone after a reboot, like the namespaces). */
const READY_DIR = '/run/ramify-net';
/** How long after a pause its slot's guest address is put back, ms: past the pause's answer (`prepareGuest`). */
export const PREPARE_GUEST_DELAY_MS = 250;

export class NamespaceNetwork implements SandboxNetwork {
  readonly prefix: string;
  readonly layout: SlotLayout;
  private readonly hostFirewall: NamespaceNetworkOptions['hostFirewall'];
  private hostReady: Promise<void> | undefined;
  /** Per-slot operation queues (see {@link serial}). */
  private readonly queues = new Map<number, Promise<unknown>>();
  /** Slots whose router table was checked by this process (built by an older version: no anti-spoofing). */
  private readonly routerChecked = new Set<number>();
  /**
   * Slots whose guest address this process set up and no runtime has used since (built or prewarmed and
   * not attached yet): their next attach skips the `ip addr show` that checks it (~20-100 ms per attach,
   * eight at once in a fork x8). The runtime that starts after an attach takes the address over.
   */
  private readonly guestReady = new Set<number>();
  /** {@link prepareGuest}s waiting for their delay, by slot. */
  private readonly guestTimers = new Map<number, NodeJS.Timeout>();

  constructor(options: NamespaceNetworkOptions = {}) {
    this.prefix = options.prefix ?? 'rmf';
    if (!/^[a-z]{1,4}$/.test(this.prefix)) throw new RangeError(`network prefix '${this.prefix}' must be 1-4 lowercase letters`);
    this.layout = options.layout ?? layoutForPrefix(this.prefix);
    this.hostFirewall = options.hostFirewall;
  }

  /** Names of the objects of `slot`. */
  names(slot: number): { sandboxNs: string; routerNs: string; hostVeth: string; uplinkVeth: string; guestVeth: string; tmpGuestVeth: string } {
    const p = this.prefix;
    return {
      sandboxNs: `${p}-s${slot}`,
      routerNs: `${p}-r${slot}`,
      hostVeth: `${p}h${slot}`,
      uplinkVeth: `${p}u${slot}`,
      guestVeth: `${p}g${slot}`,
      tmpGuestVeth: `${p}t${slot}`,
    };
  }

  async attach(_sandboxId: string, slot: number): Promise<NetworkAttachment> {
    await this.ensureHost();
    const n = this.names(slot);
    const { slotAddress } = slotAddresses(this.layout, slot);
    const attachment: NetworkAttachment = {
      slot,
      netnsName: n.sandboxNs,
      netnsPath: `${NETNS_DIR}/${n.sandboxNs}`,
      guestAddress: this.layout.guestAddress,
      slotAddress,
    };
    // The runtime starting next takes the guest address over: a delayed prepare must not put it back after that.
    this.cancelPrepareGuest(slot);
    await this.serial(slot, async () => {
      if (!this.exists(slot)) await this.rebuild(slot);
      else {
        await this.repairRouter(slot);
        if (!this.guestReady.has(slot)) await this.repairGuest(slot);
      }
      // The runtime started next takes the guest address over.
      this.guestReady.delete(slot);
    });
    return attachment;
  }

  /**
   * Run `fn` after every earlier operation on `slot` (attach, prewarm, detach) has finished: one slot's
   * namespaces are never built and torn down at the same time.
   */
  private serial<T>(slot: number, fn: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(slot) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(fn);
    const tail = next.catch(() => undefined);
    this.queues.set(slot, tail);
    void tail.then(() => {
      if (this.queues.get(slot) === tail) this.queues.delete(slot);
    });
    return next;
  }

  /**
   * Both namespaces are live (not files left behind: {@link isLiveNamespace}) and the last step of
   * {@link create} finished (a crash mid-build leaves no marker). Otherwise the slot is rebuilt.
   */
  private exists(slot: number): boolean {
    const n = this.names(slot);
    return isLiveNamespace(`${NETNS_DIR}/${n.sandboxNs}`) && isLiveNamespace(`${NETNS_DIR}/${n.routerNs}`) && existsSync(this.readyMarker(slot));
  }

  private readyMarker(slot: number): string {
    return `${READY_DIR}/${this.prefix}-${slot}.ready`;
  }

  /** Build `slot` from scratch, removing half-made leftovers first. Caller holds the slot's queue. */
  private async rebuild(slot: number): Promise<void> {
    const { hostAddress, slotAddress } = slotAddresses(this.layout, slot);
    await this.ensureHost();
    await this.teardown(slot);
    await this.create(slot, hostAddress, slotAddress);
    await mkdir(READY_DIR, { recursive: true });
    await writeFile(this.readyMarker(slot), '');
  }

  prewarm(slots: number[]): void {
    for (const slot of slots) {
      if (this.queues.has(slot) || this.exists(slot)) continue;
      this.serial(slot, async () => {
        if (!this.exists(slot)) await this.rebuild(slot);
      }).catch(() => undefined);
    }
  }

  /**
   * Put the guest address back {@link PREPARE_GUEST_DELAY_MS} from now: after the pause that asked has
   * answered (its `ip` processes would share the pause's last steps; a spawn also blocks the daemon's event
   * loop while Node forks). An attach of the slot meanwhile cancels it and checks the address itself.
   */
  prepareGuest(slot: number): void {
    this.cancelPrepareGuest(slot);
    const timer = setTimeout(() => this.prepareGuestNow(slot), PREPARE_GUEST_DELAY_MS);
    timer.unref();
    this.guestTimers.set(slot, timer);
  }

  private prepareGuestNow(slot: number): void {
    this.guestTimers.delete(slot);
    this.serial(slot, async () => {
      if (!this.exists(slot)) return;
      await this.repairGuest(slot);
      this.guestReady.add(slot);
    }).catch(() => undefined);
  }

  private cancelPrepareGuest(slot: number): void {
    clearTimeout(this.guestTimers.get(slot));
    this.guestTimers.delete(slot);
  }

  async detachIfUnused(slot: number, unused: () => Promise<boolean>): Promise<void> {
    await this.serial(slot, async () => {
      if (await unused()) await this.teardown(slot);
    });
  }

  /** Run delayed guest preparations now, and wait for background prewarms and trims (tests, shutdown). */
  async settle(): Promise<void> {
    for (const [slot, timer] of [...this.guestTimers]) {
      clearTimeout(timer);
      this.prepareGuestNow(slot);
    }
    while (this.queues.size > 0) await Promise.allSettled([...this.queues.values()]);
  }

  private async create(slot: number, hostAddress: string, slotAddress: string): Promise<void> {
    const n = this.names(slot);
    const L = this.layout;
    await runChecked(['ip', '-batch', '-'], [
      `netns add ${n.sandboxNs}`,
      `netns add ${n.routerNs}`,
      `link add ${n.tmpGuestVeth} type veth peer name ${n.guestVeth}`,
      `link set ${n.tmpGuestVeth} netns ${n.sandboxNs}`,
      `link set ${n.guestVeth} netns ${n.routerNs}`,
      `link add ${n.hostVeth} type veth peer name ${n.uplinkVeth}`,
      `link set ${n.uplinkVeth} netns ${n.routerNs}`,
      `addr add ${hostAddress}/30 dev ${n.hostVeth}`,
      `link set ${n.hostVeth} up`,
    ].join('\n') + '\n');
    await this.sysctl(n.sandboxNs, { 'net/ipv6/conf/all/disable_ipv6': '1', 'net/ipv6/conf/default/disable_ipv6': '1' });
    await this.sysctl(n.routerNs, { 'net/ipv4/ip_forward': '1', 'net/ipv6/conf/all/disable_ipv6': '1', 'net/ipv6/conf/default/disable_ipv6': '1' });
    await runChecked(['ip', '-n', n.sandboxNs, '-batch', '-'], [
      'link set lo up',
      `link set ${n.tmpGuestVeth} name eth0`,
      `addr add ${L.guestAddress}/${L.guestPrefix} dev eth0`,
      'link set eth0 up',
      `route add default via ${L.gatewayAddress}`,
    ].join('\n') + '\n');
    await runChecked(['ip', '-n', n.routerNs, '-batch', '-'], [
      'link set lo up',
      `addr add ${L.gatewayAddress}/${L.guestPrefix} dev ${n.guestVeth}`,
      `link set ${n.guestVeth} up`,
      `addr add ${slotAddress}/30 dev ${n.uplinkVeth}`,
      `link set ${n.uplinkVeth} up`,
      `route add default via ${hostAddress}`,
    ].join('\n') + '\n');
    await runChecked(['nsenter', `--net=${NETNS_DIR}/${n.routerNs}`, 'nft', '-f', '-'], this.routerTable(slot));
    this.routerChecked.add(slot);
    this.guestReady.add(slot);
  }

  /**
   * The router's table (replaces any older one): NAT (the sandbox is the guest address inside, its slot address
   * outside) and anti-spoofing (from the sandbox only the guest address is forwarded).
   */
  private routerTable(slot: number): string {
    const n = this.names(slot);
    const L = this.layout;
    const { slotAddress } = slotAddresses(L, slot);
    return [
      'table ip nat {}',
      'delete table ip nat',
      'table ip nat {',
      `  chain post { type nat hook postrouting priority srcnat; oifname "${n.uplinkVeth}" ip saddr ${L.guestAddress} snat to ${slotAddress}; }`,
      `  chain pre { type nat hook prerouting priority dstnat; iifname "${n.uplinkVeth}" ip daddr ${slotAddress} dnat to ${L.guestAddress}; }`,
      `  chain antispoof { type filter hook forward priority filter; iifname "${n.guestVeth}" ip saddr != ${L.guestAddress} drop; }`,
      '}',
    ].join('\n') + '\n';
  }

  /** Give a slot built by an older version the router's anti-spoofing (checked once per slot and process). */
  private async repairRouter(slot: number): Promise<void> {
    if (this.routerChecked.has(slot)) return;
    const router = `--net=${NETNS_DIR}/${this.names(slot).routerNs}`;
    const r = await run(['nsenter', router, 'nft', 'list', 'chain', 'ip', 'nat', 'antispoof']);
    if (r.code !== 0) await runChecked(['nsenter', router, 'nft', '-f', '-'], this.routerTable(slot));
    this.routerChecked.add(slot);
  }

  /** Re-add the guest address and default route if the runtime removed them (before a restore). */
  private async repairGuest(slot: number): Promise<void> {
    const n = this.names(slot);
    const L = this.layout;
    const addrs = await run(['ip', '-n', n.sandboxNs, '-o', '-4', 'addr', 'show', 'dev', 'eth0']);
    if (addrs.stdout.includes(`${L.guestAddress}/`)) return;
    await runChecked(['ip', '-n', n.sandboxNs, '-batch', '-'], [
      `addr add ${L.guestAddress}/${L.guestPrefix} dev eth0`,
      'link set eth0 up',
      `route replace default via ${L.gatewayAddress}`,
    ].join('\n') + '\n');
  }

  private async sysctl(ns: string, values: Record<string, string>): Promise<void> {
    // Write /proc/sys inside the namespace with nsenter (not `ip netns exec`, which remounts /sys).
    const script = Object.keys(values).map((_, i) => `printf %s "$${2 * i + 2}" > "/proc/sys/$${2 * i + 1}"`).join(' && ');
    const args = Object.entries(values).flat();
    await runChecked(['nsenter', `--net=${NETNS_DIR}/${ns}`, 'sh', '-c', script, 'sysctl', ...args]);
  }

  async detach(slot: number): Promise<void> {
    await this.serial(slot, () => this.teardown(slot));
  }

  /** Remove the slot's namespaces and host veth. Caller holds the slot's queue. */
  private async teardown(slot: number): Promise<void> {
    const n = this.names(slot);
    this.cancelPrepareGuest(slot);
    this.routerChecked.delete(slot);
    this.guestReady.delete(slot);
    await rm(this.readyMarker(slot), { force: true });
    // Deleting a namespace deletes the veths inside it, and with them their host-side peers. One `ip`
    // process for the three (`-force`: each is tried whatever the others did; any may be gone already):
    // a spawn blocks the daemon's event loop ~5-15 ms (fork of a large process), so fewer is better.
    await run(['ip', '-force', '-batch', '-'], [`netns delete ${n.sandboxNs}`, `netns delete ${n.routerNs}`, `link delete ${n.hostVeth}`, ''].join('\n'));
    // A namespace file left behind (no namespace mounted on it) would make `netns add` fail: remove it.
    for (const ns of [n.sandboxNs, n.routerNs]) {
      const path = `${NETNS_DIR}/${ns}`;
      if (existsSync(path) && !isLiveNamespace(path)) await rm(path, { force: true });
    }
  }

  /**
   * Bytes through the slot's host-side veth (`<p>h<slot>`, in the host's namespace: two sysfs reads, no
   * spawn). Every packet of the sandbox crosses it (egress, DNS, the ingress, private networks), so the
   * host's receive counter is what the sandbox sent and its transmit counter what it received.
   */
  async trafficBytes(slot: number): Promise<SlotTraffic | null> {
    const dir = `/sys/class/net/${this.names(slot).hostVeth}/statistics`;
    const [rx, tx] = await Promise.all([readLinkCounter(`${dir}/rx_bytes`), readLinkCounter(`${dir}/tx_bytes`)]);
    return rx === null || tx === null ? null : { inBytes: tx, outBytes: rx };
  }

  async listSlots(): Promise<number[]> {
    const names = existsSync(NETNS_DIR) ? await readdir(NETNS_DIR) : [];
    const re = new RegExp(`^${this.prefix}-[sr](\\d+)$`);
    const slots = new Set<number>();
    for (const name of names) {
      const m = re.exec(name);
      if (m) slots.add(Number(m[1]));
    }
    return [...slots].sort((a, b) => a - b);
  }

  /**
   * Host side, once per process: IPv4 forwarding and the daemon's own nftables table (open egress), or the
   * `hostFirewall`'s. Without one, an egress route guard left by an earlier enforcing daemon is removed.
   */
  ensureHost(): Promise<void> {
    this.hostReady ??= (async () => {
      await this.assertSlotRangeFree();
      if (this.hostFirewall) return this.hostFirewall.install();
      await writeFile('/proc/sys/net/ipv4/ip_forward', '1');
      const t = this.prefix;
      const range = slotRange(this.layout);
      await removeRouteGuard(range);
      // One transaction: create-if-missing, delete, define: an atomic replace of our table only.
      await runChecked(['nft', '-f', '-'], [
        `table ip ${t} {}`,
        `delete table ip ${t}`,
        `table ip ${t} {`,
        `  chain forward { type filter hook forward priority filter; policy accept; }`,
        `  chain postrouting { type nat hook postrouting priority srcnat; ip saddr ${range} oifname != "${t}h*" masquerade; }`,
        '}',
      ].join('\n') + '\n');
    })();
    this.hostReady.catch(() => (this.hostReady = undefined));
    return this.hostReady;
  }

  /**
   * Refuse to share the slot range with another prefix (two daemons whose prefixes hash to one range would
   * put the same /30 on two host veths, and replies would go to the wrong one).
   * @throws RamifyError `RUNTIME_ERROR` naming the interfaces that hold addresses in the range.
   */
  private async assertSlotRangeFree(): Promise<void> {
    const range = slotRange(this.layout);
    const out = await run(['ip', '-o', '-4', 'addr', 'show', 'to', range]);
    const foreign = [...new Set(out.stdout.split('\n').map((l) => l.split(/\s+/)[1] ?? '').filter((dev) => dev !== '' && !dev.startsWith(`${this.prefix}h`)))];
    if (foreign.length > 0) {
      throw new RamifyError('RUNTIME_ERROR', `the slot range ${range} of network prefix '${this.prefix}' is in use by ${foreign.join(', ')} (another daemon whose prefix maps to the same range?); choose another prefix`, { range, interfaces: foreign });
    }
  }

  /**
   * Remove every namespace, the host tables (`ip`, `inet`, the ingress's and the agent channel's) and the egress route guard made with this prefix
   * (tests, `ramify serve --reset-network`: daemon/src/reset-network.ts).
   */
  async destroyAll(): Promise<void> {
    await this.settle();
    for (const slot of await this.listSlots()) await this.detach(slot);
    // Slots whose marker outlived a half-made build.
    for (const name of await readdir(READY_DIR).catch(() => [] as string[])) {
      if (name.startsWith(`${this.prefix}-`)) await rm(`${READY_DIR}/${name}`, { force: true });
    }
    await run(['nft', 'delete', 'table', 'ip', this.prefix]);
    await removeIngressFirewall(this.prefix);
    await removeAgentFirewall(this.prefix);
    // The egress enforcer's table (made by `hostFirewall`, or by an earlier daemon with enforcement).
    if (this.hostFirewall) await this.hostFirewall.uninstall();
    else {
      await run(['nft', 'delete', 'table', 'inet', this.prefix]);
      await removeRouteGuard(slotRange(this.layout));
    }
    this.hostReady = undefined;
  }
}

/**
 * A link counter file (sysfs `statistics/*_bytes`: a decimal number), or null when unreadable. One open and
 * one read, the close not waited for: `readFile` is five thread-pool jobs (open, fstat, read, a read to find
 * the end, close), and a pause reads these on its way to the checkpoint, beside the agent's close and the
 * image directory's creation (docs/design/USAGE.md, "Off the critical path").
 */
export async function readLinkCounter(file: string): Promise<number | null> {
  const handle = await open(file, 'r').catch(() => null);
  if (handle === null) return null;
  const text = await handle
    .read({ buffer: Buffer.alloc(64), position: 0 })
    .then(({ bytesRead, buffer }) => buffer.toString('utf8', 0, bytesRead), () => '');
  void handle.close().catch(() => undefined);
  return /^\d+\s*$/.test(text) ? Number(text) : null;
}
