/**
 * Host-side lookups and cleanup of what a conformance daemon leaves behind: network namespaces `<prefix>-*`, host
 * veths `<prefix>h*`, the nftables table `ip <prefix>`, and runsc containers under the daemon's state
 * directory. Only objects named with the suite's own prefix (or under its own temp dir) are touched.
 */
import { readdir, rm } from 'node:fs/promises';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { layoutForPrefix, removeRouteGuard, slotRange } from '@ramify/network';

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

/** Delete every `<prefix>-*` namespace, `<prefix>h*` host veth and the `ip`/`inet <prefix>` nftables tables. */
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
  // `ip <prefix>`: the plain network table; `inet <prefix>`: the egress enforcer's (which replaces it).
  for (const family of ['ip', 'inet']) {
    if (tables.stdout.split('\n').some((line) => line.trim() === `table ${family} ${prefix}`)) await hostRun(['nft', 'delete', 'table', family, prefix]);
  }
  // The enforcer's fail-closed routing guard (ip rules on the prefix's slot range).
  await removeRouteGuard(slotRange(layoutForPrefix(prefix)));
}

/** Force-delete every runsc container whose state lives under `stateDir` (a daemon's `runtime/gvisor/state`). */
export async function removeRunscContainers(stateDir: string): Promise<void> {
  if (!existsSync(stateDir)) return;
  const { stdout } = await hostRun(['runsc', '--root', stateDir, 'list', '-quiet']);
  for (const id of stdout.split('\n').map((l) => l.trim()).filter(Boolean)) {
    await hostRun(['runsc', '--root', stateDir, 'delete', '-force', id]);
  }
}

/** The `<prefix>-s<slot>` namespace the sandbox's runsc process lives in (found through its bundle path). */
export async function sandboxNamespaceOf(dataDir: string, sandboxId: string): Promise<string> {
  const { stdout } = await hostRun(['ps', '-eo', 'pid=,args=']);
  const bundle = `${dataDir}/runtime/gvisor/bundles/${sandboxId}`;
  const line = stdout.split('\n').find((l) => l.includes('runsc-sandbox') && l.includes(`--bundle=${bundle}`));
  const pid = line?.trim().split(/\s+/)[0];
  if (!pid) throw new Error(`no runsc-sandbox process for ${sandboxId}`);
  const ns = (await hostRun(['ip', 'netns', 'identify', pid])).stdout.trim();
  if (!ns) throw new Error(`runsc-sandbox ${pid} of ${sandboxId} is in no named namespace`);
  return ns;
}
