/**
 * Layer B: a copy of layer A with the template's files and Ramify's own pieces placed in it. This is
 * the root filesystem sandboxes of the template run on (read-only to them).
 *
 * Ramify's pieces, placed after the user's files so they cannot be lost:
 * - `/opt/ramify/agent.mjs` (the agent bundle), its native addon under `/opt/ramify/node_modules/`
 *   (see agent-files.ts) and the `/run/ramify` directory for its socket;
 * - `/etc/hosts` with localhost, a neutral `/etc/hostname`, and an `/etc/resolv.conf` placeholder
 *   that the runtime bind-mounts over (the target of a bind mount must exist);
 * - `/root` as root's home (mode 0700).
 */
import { readFile } from 'node:fs/promises';
import { AGENT_GUEST_PATH, agentFiles } from './agent-files.js';
import type { ResolvedFile } from './resolve.js';
import { ensureDirInRoot, writeFileInRoot } from './root-paths.js';
import { runTool } from './run-tool.js';

export { AGENT_GUEST_PATH } from './agent-files.js';
/** Directory of the agent's unix socket inside a sandbox. */
export const AGENT_RUN_DIR = '/run/ramify';

const HOSTS = '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nff02::1\tip6-allnodes\nff02::2\tip6-allrouters\n';
const RESOLV_CONF_PLACEHOLDER = '# Replaced in every sandbox by a read-only mount of the resolver configuration Ramify provides.\n';

export interface FilesLayerOptions {
  /** Rootfs of layer A (copied, not modified). */
  baseRootfsDir: string;
  files: readonly ResolvedFile[];
  /** Host path of the agent bundle. */
  agentBundlePath: string;
  tools?: { cp?: string };
  onLine?: (line: string) => void;
}

/**
 * Make layer B at `targetDir` (must not exist): `cp -a --reflink=auto` of layer A (cheap on
 * btrfs/xfs), then the files. Rejects `TEMPLATE_BUILD_FAILED` (the copy failed) or
 * `VALIDATION_FAILED` (a file path collides with a directory in the rootfs).
 */
export async function buildFilesLayer(targetDir: string, options: FilesLayerOptions): Promise<void> {
  const log = options.onLine ?? (() => undefined);
  await runTool([options.tools?.cp ?? 'cp', '-a', '--reflink=auto', '--', options.baseRootfsDir, targetDir], { step: 'files', onLine: log });
  for (const file of options.files) {
    await writeFileInRoot(targetDir, file.path, file.data, file.mode);
    log(`placed ${file.path} (${file.data.length} bytes, mode ${file.mode.toString(8).padStart(4, '0')})`);
  }
  for (const file of await agentFiles(options.agentBundlePath)) {
    await writeFileInRoot(targetDir, file.guestPath, await readFile(file.hostPath), file.hostPath.endsWith('.node') ? 0o755 : 0o644);
  }
  await ensureDirInRoot(targetDir, AGENT_RUN_DIR);
  await ensureDirInRoot(targetDir, '/root', 0o700);
  log(`placed the agent at ${AGENT_GUEST_PATH}`);

  await writeFileInRoot(targetDir, '/etc/hosts', HOSTS, 0o644);
  await writeFileInRoot(targetDir, '/etc/hostname', 'sandbox\n', 0o644);
  await writeFileInRoot(targetDir, '/etc/resolv.conf', RESOLV_CONF_PLACEHOLDER, 0o644);
}
