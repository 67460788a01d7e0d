/**
 * The QEMU command line of one microVM. One function builds it for every role, so a VM, its restores
 * and the loader used to materialize a checkpoint have identical machines and devices (a migration
 * stream only loads into the same device layout):
 *
 * - q35, guest RAM as `memory-backend-file` (`mem0`) so a checkpoint need not copy RAM,
 * - virtio-blk (qcow2 overlay), virtio-net (tap in the sandbox's namespace), virtio-serial with the
 *   agent's port on a host unix socket, virtio-rng, vmgenid (fresh guest RNG seed after every restore),
 *   virtio-balloon (the sandbox's memory limit),
 * - serial console appended to a file, QMP on a unix socket, no graphics, no default devices.
 */
import { ROOT_DRIVE_ID } from './disks.js';
import { AGENT_PORT_NAME } from './guest-init.js';

/** Which accelerator runs the guest. */
export type Accelerator = 'kvm' | 'tcg';

/** What must be equal between a VM and every restore of its checkpoints. */
export interface MachineConfig {
  accelerator: Accelerator;
  /** `-cpu` model, e.g. `qemu64,+rdrand` (TCG) or `host` (KVM). */
  cpuModel: string;
  cpuCount: number;
  memoryMB: number;
}

/** Guest MAC of every microVM (forks share it; each lives in its own namespace). Locally administered. */
export const GUEST_MAC = '02:72:6d:00:00:02';

/** Host-side files of one QEMU process. */
export interface QemuPaths {
  ramFile: string;
  disk: string;
  consoleLog: string;
  qmpSocket: string;
  /** The agent port's unix socket; null: no host side (the loader). */
  agentSocket: string | null;
  kernel: string;
  initrd: string;
}

export interface QemuLaunch {
  machine: MachineConfig;
  paths: QemuPaths;
  /**
   * `shared`: QEMU writes guest RAM to the file (boot; the loader) — a checkpoint keeps the file as the
   * memory image. `private`: a copy-on-write mapping of an image's RAM file (restores and forks).
   */
  ram: 'shared' | 'private';
  /** Tap interface in the current network namespace; null: a NIC without backend (its state cannot be loaded). */
  tap: string | null;
  /** Kernel command line (only read on a fresh boot). */
  append: string;
  /**
   * `fresh`: boot; `fresh-paused`: boot once told `cont`; `incoming`: wait for `migrate-incoming` and
   * run afterwards; `incoming-paused`: stay paused.
   */
  start: 'fresh' | 'fresh-paused' | 'incoming' | 'incoming-paused';
  /** TCG translation cache in MiB (QEMU's default is much larger). */
  tcgTbSizeMB: number;
  name: string;
}

/** A value inside a QEMU `key=value,...` option: commas are doubled. */
const esc = (value: string): string => value.replaceAll(',', ',,');

/** argv (without the binary) for `launch`. */
export function qemuArgs(launch: QemuLaunch): string[] {
  const { machine: m, paths: p } = launch;
  const accel = m.accelerator === 'kvm' ? 'kvm' : `tcg,tb-size=${launch.tcgTbSizeMB}`;
  const args = [
    '-name', `${launch.name},debug-threads=on`,
    '-nodefaults', '-no-user-config', '-display', 'none', '-no-reboot',
    '-machine', 'q35,memory-backend=mem0,vmport=off,smm=off,mem-merge=off',
    '-accel', accel,
    '-cpu', m.cpuModel,
    '-smp', String(m.cpuCount),
    '-m', `${m.memoryMB}M`,
    '-object', `memory-backend-file,id=mem0,size=${m.memoryMB}M,mem-path=${esc(p.ramFile)},share=${launch.ram === 'shared' ? 'on' : 'off'}`,
    '-kernel', p.kernel, '-initrd', p.initrd, '-append', launch.append,
    '-chardev', `file,id=con0,path=${esc(p.consoleLog)},append=on`,
    '-serial', 'chardev:con0',
    '-drive', `if=none,id=${ROOT_DRIVE_ID},file=${esc(p.disk)},format=qcow2,discard=unmap`,
    '-device', `virtio-blk-pci,drive=${ROOT_DRIVE_ID},id=vblk0`,
    ...(launch.tap ? ['-netdev', `tap,id=net0,ifname=${launch.tap},script=no,downscript=no,vhost=off`] : []),
    '-device', `virtio-net-pci,${launch.tap ? 'netdev=net0,' : ''}mac=${GUEST_MAC},romfile=,id=vnet0`,
    '-device', 'virtio-serial-pci,id=vser0',
    '-chardev', p.agentSocket ? `socket,id=agent0,path=${esc(p.agentSocket)},server=on,wait=off` : 'null,id=agent0',
    '-device', `virtserialport,bus=vser0.0,chardev=agent0,name=${AGENT_PORT_NAME},id=vport0`,
    '-device', 'virtio-rng-pci,id=vrng0',
    // The sandbox's memory limit (memory-limit.ts). No deflate-on-oom (the guest must not take memory
    // back under pressure) and no free-page reporting/hinting (guest-driven discards of other pages).
    '-device', 'virtio-balloon-pci,id=vballoon0,deflate-on-oom=off,free-page-reporting=off,free-page-hint=off',
    '-device', 'vmgenid,guid=auto,id=vmgenid0',
    '-qmp', `unix:${esc(p.qmpSocket)},server=on,wait=off`,
  ];
  if (launch.start === 'incoming' || launch.start === 'incoming-paused') args.push('-incoming', 'defer');
  if (launch.start === 'incoming-paused' || launch.start === 'fresh-paused') args.push('-S');
  return args;
}

export interface KernelArgsInput {
  accelerator: Accelerator;
  /** Host TSC frequency (kHz), passed to the guest under TCG where its own calibration is unreliable. */
  tscKhz: number | null;
}

/**
 * The guest kernel command line (see RUNTIME-QEMU.md for the TCG timer flags). `init_on_alloc=0`:
 * Debian's default zeroes every page the kernel hands out, the balloon's included (slow under TCG, and
 * it dirties pages only to give them back); `swiotlb=noforce`: virtio needs no bounce buffers (64 MiB
 * saved once RAM reaches above 4 GiB).
 */
export function kernelArgs(input: KernelArgsInput): string {
  const args = ['console=ttyS0', 'rdinit=/init', 'panic=-1', 'quiet', 'loglevel=3', 'ipv6.disable=1', 'cryptomgr.notests', 'init_on_alloc=0', 'swiotlb=noforce', 'random.trust_cpu=on', '8250.nr_uarts=1', 'i8042.noaux', 'i8042.nomux', 'i8042.nopnp'];
  if (input.accelerator === 'tcg') {
    // TCG does not speculate, so guest-side speculation mitigations only cost time.
    args.push('mitigations=off', 'tsc=reliable', 'no_timer_check');
    if (input.tscKhz) args.push(`tsc_early_khz=${input.tscKhz}`);
  }
  return args.join(' ');
}
