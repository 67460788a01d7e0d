/**
 * The OCI runtime spec (config.json) of one gVisor sandbox. Every sandbox of a template gets the same
 * mounts, so a checkpoint of one restores into the bundle of another (that is what a fork is).
 */
import type { RuntimeSandboxSpec } from '@ramify/core';

const CAPS = [
  'CAP_CHOWN', 'CAP_DAC_OVERRIDE', 'CAP_FOWNER', 'CAP_FSETID', 'CAP_KILL', 'CAP_SETGID', 'CAP_SETUID', 'CAP_SETPCAP',
  'CAP_NET_BIND_SERVICE', 'CAP_NET_RAW', 'CAP_NET_ADMIN', 'CAP_SYS_CHROOT', 'CAP_SYS_ADMIN', 'CAP_SYS_PTRACE',
  'CAP_SYS_TIME', 'CAP_MKNOD', 'CAP_AUDIT_WRITE',
];

/** CPU period of the CFS quota, µs. */
export const CPU_PERIOD_US = 100_000;

export interface OciSpecOptions {
  /** The init process (the agent under tini). Ignored by restore, but part of the bundle. */
  argv: string[];
  /** Host file bind-mounted read-only at /etc/resolv.conf. */
  resolvConfPath: string;
  /** Cgroup path for the sandbox, e.g. `/ramify/sbx_1`; null = no cgroup limits. */
  cgroupsPath: string | null;
}

/**
 * Build config.json for `spec`. Memory limit = `memoryMB` MiB (what runsc makes the sandbox's `MemTotal`;
 * the runtime raises the cgroup's limit by the OOM guard's headroom once runsc read it, see
 * `memory-headroom.ts`); CPU quota = `cpuCount` cores.
 */
export function buildOciSpec(spec: RuntimeSandboxSpec, options: OciSpecOptions): Record<string, unknown> {
  return {
    ociVersion: '1.0.0',
    process: {
      user: { uid: 0, gid: 0 },
      args: options.argv,
      env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'HOME=/root', 'LANG=C.UTF-8'],
      cwd: '/',
      capabilities: { bounding: CAPS, effective: CAPS, permitted: CAPS },
      rlimits: [{ type: 'RLIMIT_NOFILE', hard: 1048576, soft: 1048576 }],
    },
    root: { path: spec.rootfsDir, readonly: false },
    hostname: spec.hostname,
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc' },
      { destination: '/dev', type: 'tmpfs', source: 'tmpfs' },
      { destination: '/dev/pts', type: 'devpts', source: 'devpts' },
      { destination: '/dev/shm', type: 'tmpfs', source: 'shm' },
      { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
      // Read-only: with --overlay2=root:memory a bind mount is not overlaid, and rw would write through to the host.
      { destination: '/etc/resolv.conf', type: 'bind', source: options.resolvConfPath, options: ['rbind', 'ro'] },
    ],
    linux: {
      namespaces: [
        { type: 'pid' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' },
        // The sandbox joins the network namespace runsc is started in: one bundle shape serves every fork.
        { type: 'network', path: '/proc/self/ns/net' },
      ],
      ...(options.cgroupsPath
        ? {
            cgroupsPath: options.cgroupsPath,
            resources: {
              memory: { limit: spec.resources.memoryMB * 1024 * 1024 },
              cpu: { quota: spec.resources.cpuCount * CPU_PERIOD_US, period: CPU_PERIOD_US },
            },
          }
        : {}),
    },
  };
}
