/**
 * The Runtime port: how core starts, checkpoints, restores and stops isolated sandboxes. One
 * implementation per folder under `packages/runtime/` (gVisor today, QEMU next); each is handed its
 * options by the daemon and never reads config itself. Every implementation passes the shared
 * conformance suite.
 *
 * Vocabulary: an *image* is a directory on the host holding one checkpoint (memory, processes and the
 * in-memory file overlay of a sandbox). Restoring an image N times gives N independent sandboxes.
 * Restoring is how every sandbox starts: a template is a root filesystem plus an image of it booted
 * and idle.
 */
import type { RuntimeName } from '@ramify/contracts';
import type { Duplex } from 'node:stream';
import type { NetworkAttachment } from './network.js';

export interface RuntimeCapabilities {
  /** Checkpoints carry memory and processes (false would mean files only). */
  memorySnapshot: boolean;
  /** Forks share unchanged memory pages with their image (copy-on-write). */
  forkSharesMemory: boolean;
  /** The runtime can only checkpoint when the sandbox has no connected non-loopback TCP endpoint. */
  checkpointNeedsQuietNetwork: boolean;
  /**
   * How the host reaches the agent, hence how the agent must be started at boot: `unix-socket` (the
   * agent listens on a socket inside the sandbox; the host bridges to it), `netstack-tcp` (the agent also
   * listens on `@ramify/agent`'s `AGENT_TCP_PORT` in the sandbox's own network stack, `serve --tcp-port`,
   * and the host dials it through the sandbox's network slot; gVisor) or `virtio-serial` (the agent
   * serves a virtio-serial port whose host end is a unix socket; QEMU).
   */
  agentChannel: 'unix-socket' | 'netstack-tcp' | 'virtio-serial';
  /**
   * The sandbox's own root disk, when the runtime gives it one: the size template images are made with
   * (the default and least size, MiB) and the most a sandbox may ask for (MiB). A disk grows at a
   * restore, never shrinks. null: no disk of its own (gVisor keeps file changes in the sandbox's memory).
   */
  rootDisk: { defaultSizeMB: number; maxSizeMB: number } | null;
  /**
   * Who stops a process that exhausts the sandbox's memory, hence how the agent must be started at boot
   * (`serve --oom-killer <value>`): `kernel` (the guest kernel's OOM killer; the agent keeps itself out of
   * its choice and reports kills) or `agent` (the runtime has none of its own, as gVisor: the agent's OOM
   * guard kills the user process using the most, and the runtime gives the instance room above
   * `memoryMB` for it to act in).
   */
  oomKiller: 'kernel' | 'agent';
}

export interface SandboxResources {
  cpuCount: number;
  memoryMB: number;
  /**
   * Root disk size, MiB, when the runtime has {@link RuntimeCapabilities.rootDisk}: the restored disk is
   * grown to it (refused `VALIDATION_FAILED` below the image's); null for runtimes without one.
   */
  diskSizeMB: number | null;
}

/** How {@link Runtime.restore} gets its image. */
export interface RestoreOptions {
  /**
   * Present when the image is still being downloaded into `imageDir`: resolves once every byte is
   * written and checked; rejects with the download's error (`RUNTIME_ERROR` corrupt, `STORAGE_UNAVAILABLE`).
   */
  imageArriving?: Promise<void>;
}

/** What a runtime needs to bring up one sandbox. */
export interface RuntimeSandboxSpec {
  sandboxId: string;
  /** Root filesystem directory of the sandbox's template (read-only; changes live in the sandbox's memory). */
  rootfsDir: string;
  resources: SandboxResources;
  hostname: string;
  network: NetworkAttachment;
}

export interface RuntimeInstanceStatus {
  state: 'running' | 'stopped' | 'missing';
  /** Why it stopped, when the runtime knows (e.g. `oom`). */
  reason?: string;
}

/**
 * Raw counters of one runtime instance of a sandbox, as the host sees them. Counters start near zero with
 * each new instance (a restore, a resume): `instance` tells instances apart, so the sampler knows when to
 * start counting again.
 */
export interface RuntimeUsage {
  /** Names the instance (gVisor: its incarnation's container id; microVM: its QEMU process and start time). */
  instance: string;
  /**
   * CPU time the instance has used so far, µs: every process of it, the runtime's own included (gVisor:
   * its cgroup's `cpuacct.usage` / `cpu.stat`; microVM: the QEMU process's user + system time, `/proc/PID/stat`).
   */
  cpuTimeUs: number;
  /** Memory it holds now, bytes (gVisor: its cgroup's usage, file changes included; microVM: QEMU's resident set); null when unknown. */
  memoryUsedBytes: number | null;
  /** The most it has held, bytes (gVisor: the cgroup's high-water mark; microVM: QEMU's `VmHWM`); null when unknown. */
  memoryPeakBytes: number | null;
  /** Bytes its own disk uses on the host (microVM: allocated bytes of its disk overlays); null without a disk of its own. */
  diskUsedBytes: number | null;
}

export interface Runtime {
  readonly name: RuntimeName;
  readonly capabilities: RuntimeCapabilities;
  /**
   * One line for operators: version and mode, e.g. `runsc version 0.0~20221219.0` or
   * `QEMU 7.2.22, TCG (KVM guest did not boot: ...)`. `ramify serve` prints it; `/v1/health` returns it.
   */
  readonly summary?: string;
  /**
   * Version of the runtime's image layout, when it has one (e.g. `microvm-2`). Template images are cached
   * by it: a runtime whose format changed gets its images rebuilt instead of failing to restore old ones.
   */
  readonly imageFormat?: string;

  /**
   * Boot a fresh sandbox from a root filesystem with `argv` as its init (the agent). Used to build
   * template images; costs a full boot (hundreds of ms for gVisor).
   */
  boot(spec: RuntimeSandboxSpec, argv: string[]): Promise<void>;

  /**
   * Optional: reject `VALIDATION_FAILED` (naming the field) when a sandbox restored from `imageDir` cannot
   * have `resources` (e.g. more memory than a microVM image's RAM). Create
   * calls it before anything is stored, so a refused create leaves nothing behind.
   */
  checkResources?(resources: SandboxResources, imageDir: string): Promise<void>;

  /**
   * Start a sandbox by restoring `imageDir`. With `options.imageArriving` the image's files exist at
   * their full sizes but their bytes are still being downloaded: the runtime may start the instance
   * meanwhile (gVisor does: docs/design/STORAGE.md, "Restore while the image arrives") but reads no byte of
   * the image before it resolves; when it rejects, the runtime stops what it started and rejects with
   * that error. Rejects `RUNTIME_ERROR` with the runtime's message.
   */
  restore(spec: RuntimeSandboxSpec, imageDir: string, options?: RestoreOptions): Promise<void>;

  /**
   * Checkpoint the sandbox into `imageDir` (created; must not exist). The sandbox is stopped afterwards
   * and its runtime state deleted. The caller must have closed every agent channel first.
   * @returns the image size in bytes.
   */
  checkpoint(sandboxId: string, imageDir: string): Promise<{ sizeBytes: number }>;

  /**
   * Optional: checkpoint the sandbox into `imageDir` like {@link checkpoint}, but leave it running in
   * place (a fork point: the sandbox is stopped only while its state is copied; its processes, network
   * connections and runtime instance carry on). The caller closes the agent channels first and opens
   * one again afterwards. When it fails, the sandbox is still running (else the error says it is gone).
   * Runtimes without it fork a running sandbox by checkpointing and restoring it.
   * @returns the image size in bytes.
   */
  checkpointKeepRunning?(sandboxId: string, imageDir: string): Promise<{ sizeBytes: number }>;

  /** Stop and delete the sandbox; a no-op when it does not exist. */
  kill(sandboxId: string): Promise<void>;

  /** A byte stream to the agent inside the sandbox (not over the sandbox's network card). */
  openAgentChannel(sandboxId: string): Promise<Duplex>;

  status(sandboxId: string): Promise<RuntimeInstanceStatus>;

  /**
   * Optional, cheap (no process spawned once the instance is known; the liveness monitor calls it every
   * second for every running sandbox): false only when the instance's own processes are certainly gone
   * (killed from outside, crashed). True when unsure; {@link status} gives the verdict and the reason.
   */
  isAlive?(sandboxId: string): Promise<boolean>;

  /**
   * Optional, cheap (a few file reads, no process spawned; core's usage sampler calls it every
   * `usageSampleMs` for each running sandbox, and once more right before the instance is checkpointed or
   * killed): the raw counters of the sandbox's current instance. Null when it has no instance or they
   * cannot be read.
   */
  usage?(sandboxId: string): Promise<RuntimeUsage | null>;

  /**
   * After a daemon restart: wait (bounded) until runtime commands on this sandbox that a previous daemon
   * process left running (a checkpoint or restore outlives a killed daemon) have finished, so that
   * {@link status} and the files on disk reflect their outcome.
   */
  settleInterrupted(sandboxId: string): Promise<void>;

  /** Ids of every sandbox this runtime has state for (running or stopped), for reconcile after a restart. */
  list(): Promise<string[]>;
}
