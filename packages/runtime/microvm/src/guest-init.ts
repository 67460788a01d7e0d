/**
 * What the guest runs before the sandbox's own init: the initramfs's `/init` (busybox sh) and the
 * per-boot configuration it reads from `/ramify/boot.conf`.
 *
 * `/init` loads the virtio and ext4 modules listed in `/ramify/modules`, waits (bounded) until the
 * balloon has brought the guest's memory down to the sandbox's limit when boot.conf names one (the
 * guest is still nearly empty then, so the pages it gives up were never written), names the
 * virtio-serial ports under `/dev/virtio-ports/` (udev's job on a full system), then either prints the probe marker
 * and powers off (acceleration probe) or mounts the ext4 root from `/dev/vda`, configures `eth0`
 * (address and gateway of the sandbox namespace), sets the hostname, writes `/etc/resolv.conf`, moves
 * `/proc`, `/sys`, `/dev` into the new root and `switch_root`s into the sandbox's init argv.
 */

/** Printed on the serial console by `/init` right before it hands over to the sandbox's init. */
export const BOOT_MARKER = 'ramify-init: switching root';
/** Printed by the acceleration probe guest before it powers off. */
export const PROBE_MARKER = 'ramify-init: probe ok';
/** Name of the agent's virtio-serial port; the guest sees `/dev/virtio-ports/<name>`. */
export const AGENT_PORT_NAME = 'org.ramify.agent0';
/** Path of the agent's port inside the guest. */
export const AGENT_PORT_PATH = `/dev/virtio-ports/${AGENT_PORT_NAME}`;

/** The initramfs's `/init`. Fixed text: everything variable comes from `/ramify/boot.conf`. */
export const INIT_SCRIPT = `#!/bin/sh
export PATH=/bin
mkdir -p /proc /sys /dev /newroot
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec 0</dev/console 1>/dev/console 2>&1
say() { echo "ramify-init: $*"; }
fail() { say "FAILED: $*"; sleep 1; poweroff -f; }
. /ramify/boot.conf
while read -r mod; do
  [ -n "$mod" ] && { insmod "/lib/modules/$mod" 2>/dev/null || say "insmod $mod failed"; }
done < /ramify/modules
if [ "$RAMIFY_MODE" = probe ]; then echo "${PROBE_MARKER}"; poweroff -f; fi
memtotal() { while read -r k v _; do [ "$k" = MemTotal: ] && { echo "$v"; return; }; done < /proc/meminfo; }
if [ -n "$RAMIFY_MEM_LIMIT_KB" ]; then
  # Builtins only and a slow poll: every process started here would dirty fresh pages the balloon then skips.
  i=0
  while [ "$(memtotal)" -gt "$RAMIFY_MEM_LIMIT_KB" ]; do
    i=$((i + 1)); [ $i -gt 600 ] && { say "the balloon did not reach the memory limit"; break; }; sleep 0.2
  done
fi
i=0
while [ ! -b /dev/vda ] || ! ls /sys/class/virtio-ports/ 2>/dev/null | grep -q vport; do
  i=$((i + 1)); [ $i -gt 500 ] && fail "no root disk or agent port appeared"; sleep 0.02
done
mkdir -p /dev/virtio-ports
for p in /sys/class/virtio-ports/*; do
  [ -f "$p/name" ] && ln -sf "../\${p##*/}" "/dev/virtio-ports/$(cat "$p/name")"
done
mount -t ext4 -o noatime /dev/vda /newroot || fail "cannot mount the root disk"
ip link set lo up
if [ -n "$RAMIFY_NET_ADDR" ]; then
  ip link set eth0 up && ip addr add "$RAMIFY_NET_ADDR" dev eth0 || say "cannot configure eth0"
  [ -n "$RAMIFY_NET_GW" ] && { ip route add default via "$RAMIFY_NET_GW" || say "cannot add the default route"; }
fi
hostname "$RAMIFY_HOSTNAME"
for d in proc sys dev run tmp; do mkdir -p "/newroot/$d"; done
if [ -s /ramify/resolv.conf ]; then rm -f /newroot/etc/resolv.conf; cat /ramify/resolv.conf > /newroot/etc/resolv.conf; fi
mount -o move /proc /newroot/proc
mount -o move /sys /newroot/sys
mount -o move /dev /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts -o ptmxmode=0666,mode=0620,gid=5 devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777,nosuid,nodev shm /newroot/dev/shm
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /newroot/run
[ -d /newroot/sys/fs/cgroup ] && mount -t cgroup2 cgroup2 /newroot/sys/fs/cgroup
ln -sf /proc/self/fd /newroot/dev/fd
ln -sf /proc/self/fd/0 /newroot/dev/stdin
ln -sf /proc/self/fd/1 /newroot/dev/stdout
ln -sf /proc/self/fd/2 /newroot/dev/stderr
echo "${BOOT_MARKER}"
exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=linux switch_root /newroot "$@"
`;

/** What one boot of one guest is told (written to `/ramify/boot.conf`). */
export interface GuestBootConfig {
  /** `boot`: mount the root disk and start `argv`; `probe`: print {@link PROBE_MARKER} and power off. */
  mode: 'boot' | 'probe';
  hostname: string;
  /** `eth0` address with prefix length, e.g. `10.254.0.2/30`; null = no network configuration. */
  netAddress: string | null;
  /** Default gateway, e.g. `10.254.0.1`; null = none. */
  netGateway: string | null;
  /** The sandbox's init, run as PID 1 of the new root. */
  argv: readonly string[];
  /** The sandbox's memory limit when below the VM's RAM size: `/init` waits until the balloon got there. */
  memoryLimitMB?: number | null;
}

/** Quote `value` for a POSIX shell (single quotes). Rejects NUL bytes, which no argv can carry. */
export function shellQuote(value: string): string {
  if (value.includes('\0')) throw new RangeError('argument contains a NUL byte');
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** The text of `/ramify/boot.conf` for `config` (sourced by the guest's busybox sh, not run on the host). */
export function bootConfText(config: GuestBootConfig): string {
  return [
    `RAMIFY_MODE=${shellQuote(config.mode)}`,
    `RAMIFY_HOSTNAME=${shellQuote(config.hostname)}`,
    `RAMIFY_NET_ADDR=${shellQuote(config.netAddress ?? '')}`,
    `RAMIFY_NET_GW=${shellQuote(config.netGateway ?? '')}`,
    `RAMIFY_MEM_LIMIT_KB=${shellQuote(config.memoryLimitMB ? String(Math.floor(config.memoryLimitMB) * 1024) : '')}`,
    `set -- ${config.argv.map(shellQuote).join(' ')}`,
    '',
  ].join('\n');
}
