/**
 * Layer C: the template's booted-and-idle image. A real sandbox is booted on the `files` rootfs with
 * the agent as init, the setup commands run in it through the agent, and the idle sandbox is
 * checkpointed into snapshot storage. With gVisor's in-memory overlay the setup commands' changes
 * live in the image, not in the rootfs: the template is the pair (rootfs, image).
 *
 * Everything here goes through ports the caller injects (Runtime, SandboxNetwork, SnapshotStorage,
 * a slot allocator, ConnectAgent); nothing is faked.
 */
import { RamifyError, type AgentExit, type AgentSession } from '@ramify/contracts';
import { TEMPLATE_BUILD_SANDBOX_PREFIX, type ConnectAgent, type Runtime, type SandboxNetwork, type SandboxResources, type SnapshotManifest, type SnapshotStorage } from '@ramify/core';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AGENT_SERVE_VIRTIO_ARGV, AGENT_TCP_PORT } from '@ramify/agent';
import { AGENT_GUEST_PATH, AGENT_RUN_DIR } from './files-layer.js';
import { LineSplitter, LineTail } from './lines.js';

/** The init of a template sandbox: the agent under tini, listening on a unix socket. */
export const TEMPLATE_INIT_ARGV: readonly string[] = ['/usr/bin/tini', '-s', '--', '/usr/bin/node', AGENT_GUEST_PATH, 'serve', '--socket', `${AGENT_RUN_DIR}/agent.sock`];

/**
 * The init of a template sandbox on a runtime whose agent channel is a virtio-serial port (QEMU): the agent
 * under tini, serving the port (and the unix socket, for tools inside the guest).
 */
export const TEMPLATE_INIT_ARGV_VIRTIO: readonly string[] = ['/usr/bin/tini', '-s', '--', '/usr/bin/node', ...AGENT_SERVE_VIRTIO_ARGV.slice(1)];

/**
 * The init argv for `runtime`: by how its host reaches the agent (`netstack-tcp`: also on
 * `AGENT_TCP_PORT`), and telling the agent who stops a process that exhausts the sandbox's memory
 * (`--oom-killer`, see `RuntimeCapabilities.oomKiller`).
 */
export function templateInitArgv(runtime: Pick<Runtime, 'capabilities'>): string[] {
  const { agentChannel, oomKiller } = runtime.capabilities;
  const base = agentChannel === 'virtio-serial' ? TEMPLATE_INIT_ARGV_VIRTIO : TEMPLATE_INIT_ARGV;
  return [...base, ...(agentChannel === 'netstack-tcp' ? ['--tcp-port', String(AGENT_TCP_PORT)] : []), '--oom-killer', oomKiller];
}

/** Leases a network slot for the build sandbox (the daemon's Store implements this). */
export interface SlotAllocator {
  /** Lease a free slot to `holderId` (or return the one it holds). */
  allocateSlot(holderId: string): Promise<number>;
  /** Free the slot `holderId` holds; a no-op when none. */
  releaseSlot(holderId: string): Promise<void>;
}

/** Ports and bounds the image step needs. */
export interface ImageBuildDeps {
  runtime: Runtime;
  network: SandboxNetwork;
  slots: SlotAllocator;
  storage: SnapshotStorage;
  connectAgent: ConnectAgent;
  /** Resources of the build sandbox; default 1 CPU, 1024 MB. */
  resources?: SandboxResources;
  /** How long the agent may take to answer after boot; default 30000. */
  agentConnectTimeoutMs?: number;
  /** Deadline of each setup command; default 1800000 (30 min). */
  commandTimeoutMs?: number;
  /** How long to wait for TCP connections to drain before the checkpoint; default 90000 (TIME_WAIT lasts 60 s). */
  quietNetworkTimeoutMs?: number;
}

export interface ImageBuildRequest {
  rootfsDir: string;
  snapshotId: string;
  templateId: string;
  run: readonly string[];
  envs: Record<string, string>;
  /** Reports the start of each phase (`boot`, `run` i, `checkpoint`). */
  onPhase: (phase: { kind: 'boot' } | { kind: 'run'; index: number; cmd: string } | { kind: 'checkpoint' }) => void;
  onLine: (line: string) => void;
  signal?: AbortSignal;
}

/**
 * Boot, run the setup commands, checkpoint, commit. On any failure the sandbox is killed and the
 * half-written snapshot removed; the network slot is always released.
 * Rejects `TEMPLATE_BUILD_FAILED` (a setup command failed: `details.exitCode`, `details.stderrTail`),
 * `CHECKPOINT_BLOCKED` (connections did not drain), `AGENT_UNREACHABLE`, or the runtime's errors.
 */
export async function buildImage(request: ImageBuildRequest, deps: ImageBuildDeps): Promise<SnapshotManifest> {
  const sandboxId = `${TEMPLATE_BUILD_SANDBOX_PREFIX}${randomBytes(8).toString('hex')}`;
  const slot = await deps.slots.allocateSlot(sandboxId);
  let booted = false;
  let prepared = false;
  let committed = false;
  let session: AgentSession | null = null;
  try {
    request.onPhase({ kind: 'boot' });
    const network = await deps.network.attach(sandboxId, slot);
    request.onLine(`booting build sandbox ${sandboxId} (slot ${slot})`);
    booted = true;
    await deps.runtime.boot(
      { sandboxId, rootfsDir: request.rootfsDir, resources: deps.resources ?? { cpuCount: 1, memoryMB: 1024, diskSizeMB: null }, hostname: 'sandbox', network },
      templateInitArgv(deps.runtime),
    );
    session = await connectWithRetry(sandboxId, deps, request.signal);
    await session.setIdentity({ sandboxId, hostname: 'sandbox', envs: request.envs, clockMs: Date.now(), entropy: randomBytes(32) });
    for (const [index, cmd] of request.run.entries()) {
      request.signal?.throwIfAborted();
      request.onPhase({ kind: 'run', index, cmd });
      await runSetupCommand(session, cmd, index, { ...request, timeoutMs: deps.commandTimeoutMs ?? 1_800_000 });
    }
    request.onPhase({ kind: 'checkpoint' });
    if (deps.runtime.capabilities.checkpointNeedsQuietNetwork) await waitForQuiet(session, deps.quietNetworkTimeoutMs ?? 90_000, request.onLine);
    await session.close();
    session = null;
    const { imageDir } = await deps.storage.prepare(request.snapshotId);
    prepared = true;
    const { sizeBytes } = await deps.runtime.checkpoint(sandboxId, imageDir);
    booted = false;
    request.onLine(`checkpointed the idle sandbox (${sizeBytes} bytes)`);
    const manifest = await deps.storage.commit({ snapshotId: request.snapshotId, runtime: deps.runtime.name, templateId: request.templateId, parentSnapshotId: null });
    committed = true;
    return manifest;
  } finally {
    if (session) await session.close().catch(() => undefined);
    if (booted) await deps.runtime.kill(sandboxId).catch(() => undefined);
    if (prepared && !committed) await deps.storage.remove(request.snapshotId).catch(() => undefined);
    await deps.network.detach(slot).catch(() => undefined);
    await deps.slots.releaseSlot(sandboxId).catch(() => undefined);
  }
}

/** Open the agent channel and ping until the agent answers, within `agentConnectTimeoutMs`. */
async function connectWithRetry(sandboxId: string, deps: ImageBuildDeps, signal?: AbortSignal): Promise<AgentSession> {
  const timeoutMs = deps.agentConnectTimeoutMs ?? 30_000;
  const deadline = Date.now() + timeoutMs;
  let delayMs = 50;
  let lastError: unknown;
  for (;;) {
    signal?.throwIfAborted();
    const attempt: { session?: AgentSession } = {};
    try {
      const channel = await deps.runtime.openAgentChannel(sandboxId);
      try {
        attempt.session = await deps.connectAgent(channel);
      } catch (error) {
        channel.destroy();
        throw error;
      }
      await attempt.session.ping();
      return attempt.session;
    } catch (error) {
      lastError = error;
      await attempt.session?.close().catch(() => undefined);
    }
    const status = await deps.runtime.status(sandboxId).catch(() => null);
    if (status && status.state !== 'running') {
      throw new RamifyError('TEMPLATE_BUILD_FAILED', `the build sandbox stopped before its agent answered (${status.state}${status.reason ? `: ${status.reason}` : ''})`, { step: 'boot', lastError: messageOf(lastError) });
    }
    if (Date.now() + delayMs > deadline) {
      throw new RamifyError('AGENT_UNREACHABLE', `the agent of the build sandbox did not answer within ${timeoutMs} ms: ${messageOf(lastError)}`, { step: 'boot' });
    }
    await sleep(delayMs, undefined, { signal });
    delayMs = Math.min(delayMs * 2, 1000);
  }
}

/** Run one setup command through the agent, streaming its output as lines; reject unless it exits 0. */
async function runSetupCommand(
  session: AgentSession,
  cmd: string,
  index: number,
  options: { envs: Record<string, string>; timeoutMs: number; onLine: (line: string) => void; signal?: AbortSignal },
): Promise<void> {
  const stderrTail = new LineTail(20);
  const stdout = new LineSplitter(options.onLine);
  const stderr = new LineSplitter((line) => {
    stderrTail.add(line);
    options.onLine(line);
  });
  let onAbort: (() => void) | undefined;
  const exit = await new Promise<AgentExit>((resolve, reject) => {
    session.onClose((reason) => reject(new RamifyError('AGENT_UNREACHABLE', `the agent channel closed during setup command ${index + 1}: ${reason}`)));
    if (session.closed) reject(new RamifyError('AGENT_UNREACHABLE', 'the agent channel is closed'));
    onAbort = () => reject(options.signal?.reason ?? new Error('aborted'));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    session
      .start(
        { cmd, cwd: '/root', envs: options.envs, timeoutMs: options.timeoutMs },
        { onStdout: (chunk) => stdout.push(chunk), onStderr: (chunk) => stderr.push(chunk), onExit: resolve },
      )
      .catch(reject);
  }).finally(() => {
    if (onAbort) options.signal?.removeEventListener('abort', onAbort);
    stdout.end();
    stderr.end();
  });
  if (exit.exitCode === 0 && exit.signal === null && exit.error === null) return;
  const ended = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.exitCode}`;
  const how =
    exit.error === 'timeout' ? `timed out after ${options.timeoutMs} ms` : exit.error === 'oom' ? `ran out of memory (${ended})` : ended;
  const tail = stderrTail.toString();
  throw new RamifyError('TEMPLATE_BUILD_FAILED', `setup command ${index + 1} ${how}: ${cmd}${tail ? `\n${tail}` : ''}`, {
    step: 'run',
    index,
    cmd,
    exitCode: exit.exitCode,
    signal: exit.signal,
    stderrTail: tail,
  });
}

/** Wait until the sandbox has no connected non-loopback TCP endpoint (they block a gVisor checkpoint). */
async function waitForQuiet(session: AgentSession, timeoutMs: number, onLine: (line: string) => void): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let told = false;
  for (;;) {
    const { endpoints } = await session.networkEndpoints();
    if (endpoints.length === 0) return;
    if (Date.now() >= deadline) {
      throw new RamifyError('CHECKPOINT_BLOCKED', `the build sandbox still has TCP connections after ${timeoutMs} ms, so it cannot be checkpointed: ${endpoints.join(', ')}`, { step: 'checkpoint', endpoints });
    }
    if (!told) onLine(`waiting for ${endpoints.length} TCP connection(s) to close before the checkpoint: ${endpoints.join(', ')}`);
    told = true;
    await sleep(1000);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
