/**
 * The guest's NIC inside the sandbox's network namespace. `NamespaceNetwork` gives every sandbox an
 * `eth0` (veth to its router) holding the guest address. For a microVM, QEMU's virtio-net uses a tap
 * `rvtap0` in that namespace and tc redirects every frame between `eth0` and the tap in both directions
 * (the layout Kata Containers calls tc-redirect), so the guest *is* the endpoint of `eth0`: same
 * address, same gateway, same router and host rules as a gVisor sandbox, and every fork keeps working
 * in any slot unchanged. `eth0` takes the guest's MAC, so the router's neighbour entry is right for
 * every VM (a gratuitous ARP announces the change). When the VM goes away the redirects and the tap
 * go too ({@link removeGuestLink}).
 */
import { existsSync } from 'node:fs';
import { RamifyError } from '@ramify/contracts';
import { run, runChecked } from './host-tools.js';
import { GUEST_MAC } from './qemu-argv.js';

/** Name of the tap device QEMU attaches to, inside the sandbox namespace. */
export const GUEST_TAP = 'rvtap0';
/** Tap of a checkpoint's loader QEMU: created by QEMU, connected to nothing, gone when it exits. */
export const LOADER_TAP = 'rvload0';

/** The guest's IPv4 configuration, as found on the namespace's `eth0`. */
export interface GuestAddressing {
  /** e.g. `10.254.0.2/30` */
  addressWithPrefix: string;
  /** e.g. `10.254.0.1`; null when the namespace has no default route. */
  gateway: string | null;
}

const inNetns = (netnsPath: string, argv: string[]): string[] => ['nsenter', `--net=${netnsPath}`, '--', ...argv];

/**
 * Make (idempotently) the tap and the redirects in the namespace at `netnsPath`. ~4 process spawns.
 * Rejects `RUNTIME_ERROR` when the namespace has no `eth0` or tc cannot add the redirect.
 */
export async function prepareGuestLink(netnsPath: string): Promise<void> {
  const links = await run(inNetns(netnsPath, ['ip', '-o', 'link', 'show']));
  if (!/\beth0[@:]/.test(links.stdout)) throw new RamifyError('RUNTIME_ERROR', `network namespace ${netnsPath} has no eth0`);
  const ipLines = [
    ...(links.stdout.includes(`${GUEST_TAP}:`) ? [] : [`tuntap add dev ${GUEST_TAP} mode tap`]),
    `link set ${GUEST_TAP} up`,
    `link set eth0 address ${GUEST_MAC}`,
    'link set eth0 up',
  ];
  await runChecked(inNetns(netnsPath, ['sh', '-c', 'echo 1 > /proc/sys/net/ipv4/conf/eth0/arp_notify']));
  await runChecked(inNetns(netnsPath, ['ip', '-batch', '-']), { input: ipLines.join('\n') + '\n' });
  // Deleting the ingress qdisc drops its filters: the batch below always builds the same state.
  await run(inNetns(netnsPath, ['tc', 'qdisc', 'del', 'dev', 'eth0', 'ingress']));
  await run(inNetns(netnsPath, ['tc', 'qdisc', 'del', 'dev', GUEST_TAP, 'ingress']));
  await runChecked(inNetns(netnsPath, ['tc', '-batch', '-']), {
    input: [
      'qdisc add dev eth0 ingress',
      `filter add dev eth0 parent ffff: protocol all prio 1 u32 match u32 0 0 action mirred egress redirect dev ${GUEST_TAP}`,
      `qdisc add dev ${GUEST_TAP} ingress`,
      `filter add dev ${GUEST_TAP} parent ffff: protocol all prio 1 u32 match u32 0 0 action mirred egress redirect dev eth0`,
    ].join('\n') + '\n',
  });
}

/**
 * Undo {@link prepareGuestLink} (the VM is gone): drop the redirects and the tap, so that a later
 * sandbox of another runtime in this slot (slots are reused warm) gets a plain `eth0`. `eth0` keeps the
 * guest MAC, which is harmless. A no-op when the namespace is gone.
 */
export async function removeGuestLink(netnsPath: string): Promise<void> {
  if (!existsSync(netnsPath)) return;
  await run(inNetns(netnsPath, ['tc', 'qdisc', 'del', 'dev', 'eth0', 'ingress']));
  await run(inNetns(netnsPath, ['ip', 'link', 'del', GUEST_TAP]));
}

/** Read the guest address and gateway from the namespace's `eth0` (what a gVisor sandbox would use). */
export async function readGuestAddressing(netnsPath: string): Promise<GuestAddressing | null> {
  const addrs = JSON.parse(await runChecked(inNetns(netnsPath, ['ip', '-j', '-4', 'addr', 'show', 'dev', 'eth0']))) as Array<{ addr_info?: Array<{ local: string; prefixlen: number }> }>;
  const info = addrs[0]?.addr_info?.[0];
  if (!info) return null;
  const routes = JSON.parse(await runChecked(inNetns(netnsPath, ['ip', '-j', '-4', 'route', 'show', 'default']))) as Array<{ gateway?: string }>;
  return { addressWithPrefix: `${info.local}/${info.prefixlen}`, gateway: routes[0]?.gateway ?? null };
}
