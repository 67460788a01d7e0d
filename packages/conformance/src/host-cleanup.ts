/**
 * Host-side lookups and cleanup of what a conformance daemon leaves behind: network namespaces `<prefix>-*`, host
 * veths `<prefix>h*`, the nftables table `ip <prefix>`, and runsc containers under the daemon's state
 * directory (QEMU processes: qemu-processes.ts). Only objects named with the suite's own prefix (or under its own temp dir) are touched.
 */
import { readdir, rm } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { RuntimeName } from '@ramify/contracts';
import { layoutForPrefix, removeRouteGuard, slotRange } from '@ramify/network';
import { sandboxQemuProcess, waitPidsGone } from './qemu-processes.js';

/** Result of one host command (never throws on a non-zero exit). */
export interface HostCommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `argv` on the host (no shell). Resolves with its exit code and output, whatever the code. */
export function hostRun(argv: readonly string[], opts: { timeoutMs?: number } = {}): Promise<HostCommandResult> {
  const [file, ...args] = argv;
  return new Promise((resolve) => {
    execFile(file as string, args, { timeout: opts.timeoutMs ?? 60_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** Names of the network namespaces `<prefix>-*` (sandbox `-s<slot>` and router `-r<slot>` ones). */
export async function listNamespaces(prefix: string): Promise<string[]> {
  const { stdout } = await hostRun(['ip', 'netns', 'list']);
  return stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0] ?? '')
    .filter((name) => name.startsWith(`${prefix}-`))
    .sort();
}

/** Sandbox namespaces only (`<prefix>-s<slot>`): one per sandbox that holds a network slot. */
export async function listSandboxNamespaces(prefix: string): Promise<string[]> {
  return (await listNamespaces(prefix)).filter((name) => new RegExp(`^${prefix}-s\\d+$`).test(name));
}

/**
 * Delete every `<prefix>-*` namespace, `<prefix>h*` host veth, the `ip`/`inet <prefix>` nftables tables,
 * the egress guard's ip rules and a leftover egress `ulogd` of the prefix.
 */
export async function removeHostNetwork(prefix: string): Promise<void> {
  for (const name of await listNamespaces(prefix)) await hostRun(['ip', 'netns', 'delete', name]);
  const links = await hostRun(['ip', '-o', 'link', 'show']);
  const veth = new RegExp(`^\\d+:\\s+(${prefix}h\\d+)[@:]`);
  for (const line of links.stdout.split('\n')) {
    const name = veth.exec(line)?.[1];
    if (name) await hostRun(['ip', 'link', 'delete', name]);
  }
  // The network's "slot fully built" markers (see packages/network/src/namespace-network.ts).
  for (const name of await readdir('/run/ramify-net').catch(() => [] as string[])) {
    if (name.startsWith(`${prefix}-`)) await rm(`/run/ramify-net/${name}`, { force: true });
  }
  const tables = await hostRun(['nft', 'list', 'tables']);
  // `ip <prefix>`: the plain network table; `inet <prefix>`: the egress enforcer's (which replaces it);
  // `inet <prefix>_agent` (the agent channel's), `<prefix>_ingress` and any other table of the prefix.
  const own = new RegExp(`^table (ip|inet) (${prefix}(?:_[a-z0-9_]+)?)$`);
  for (const line of tables.stdout.split('\n')) {
    const match = own.exec(line.trim());
    if (match?.[1] && match[2]) await hostRun(['nft', 'delete', 'table', match[1], match[2]]);
  }
  // The enforcer's fail-closed routing guard (ip rules on the prefix's slot range).
  await removeRouteGuard(slotRange(layoutForPrefix(prefix)));
  await removeEgressLogger(prefix);
}

/**
 * Stop a `ulogd` the egress enforcer of a `<prefix>` daemon left running (the daemon was SIGKILLed; its
 * config is `/run/ramify/egress-<prefix>/ulogd.conf`): it holds the prefix's NFLOG group, and a daemon
 * whose own ulogd cannot bind it logs no connections.
 */
export async function removeEgressLogger(prefix: string): Promise<void> {
  const config = `/run/ramify/egress-${prefix}/ulogd.conf`;
  const { stdout } = await hostRun(['ps', '-eo', 'pid=,args=']);
  const pids = stdout
    .split('\n')
    .map((line) => /^\s*(\d+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null && /(^|\/)ulogd\s/.test(m[2] ?? '') && (m[2] ?? '').includes(config))
    .map((m) => Number(m[1]));
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  await waitPidsGone(pids, 5_000);
}

/** Force-delete every runsc container whose state lives under `stateDir` (a daemon's `runtime/gvisor/state`). */
export async function removeRunscContainers(stateDir: string): Promise<void> {
  if (!existsSync(stateDir)) return;
  const { stdout } = await hostRun(['runsc', '--root', stateDir, 'list', '-quiet']);
  for (const id of stdout.split('\n').map((l) => l.trim()).filter(Boolean)) {
    await hostRun(['runsc', '--root', stateDir, 'delete', '-force', id]);
  }
}

/**
 * The `<prefix>-s<slot>` namespace a sandbox lives in, found through its runtime's host process: the
 * `runsc-sandbox` process of its bundle (gVisor) or its VM's QEMU process (microVM). Rejects when no
 * such process runs or it is in no named namespace.
 */
export async function sandboxNamespaceOf(dataDir: string, sandboxId: string, runtime: RuntimeName = 'gvisor'): Promise<string> {
  let pid: string | undefined;
  if (runtime === 'microvm') {
    pid = sandboxQemuProcess(dataDir, sandboxId)?.pid.toString();
    if (!pid) throw new Error(`no QEMU process for ${sandboxId}`);
  } else {
    const { stdout } = await hostRun(['ps', '-eo', 'pid=,args=']);
    const bundle = `${dataDir}/runtime/gvisor/bundles/${sandboxId}`;
    const line = stdout.split('\n').find((l) => l.includes('runsc-sandbox') && l.includes(`--bundle=${bundle}`));
    pid = line?.trim().split(/\s+/)[0];
    if (!pid) throw new Error(`no runsc-sandbox process for ${sandboxId}`);
  }
  const ns = (await hostRun(['ip', 'netns', 'identify', pid])).stdout.trim();
  if (!ns) throw new Error(`the ${runtime} process ${pid} of ${sandboxId} is in no named namespace`);
  return ns;
}
