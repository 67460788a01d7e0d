/**
 * The agent's files in a template: the one-file bundle and the native addon beside it (node-pty's
 * prebuilt `pty.node`, which `packages/agent/scripts/bundle.mjs` copies into `node_modules/` next to
 * the bundle). Both land under `/opt/ramify/`, and both count in the files layer's cache key.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { RamifyError } from '@ramify/contracts';

/** Where the agent bundle lives inside a template. */
export const AGENT_GUEST_PATH = '/opt/ramify/agent.mjs';
const AGENT_GUEST_DIR = '/opt/ramify';

/** One file of the agent: its path on the host and inside the template. */
export interface AgentFile {
  hostPath: string;
  guestPath: string;
}

/**
 * The bundle at `bundlePath` and every file under `node_modules/` beside it (none is fine: an agent
 * without the addon serves everything but terminals), sorted by guest path.
 */
export async function agentFiles(bundlePath: string): Promise<AgentFile[]> {
  const dir = dirname(bundlePath);
  const modules = join(dir, 'node_modules');
  const entries = await readdir(modules, { recursive: true, withFileTypes: true }).catch(() => []);
  const extra = entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .map((hostPath) => ({ hostPath, guestPath: `${AGENT_GUEST_DIR}/${relative(dir, hostPath)}` }));
  return [{ hostPath: bundlePath, guestPath: AGENT_GUEST_PATH }, ...extra.sort((a, b) => a.guestPath.localeCompare(b.guestPath))];
}

/**
 * sha256 (hex) over the agent's files, names and contents, for the files layer's cache key.
 * @throws RamifyError TEMPLATE_BUILD_FAILED when the bundle cannot be read (build @ramify/agent first).
 */
export async function agentFilesSha256(bundlePath: string): Promise<string> {
  const hash = createHash('sha256');
  for (const file of await agentFiles(bundlePath)) {
    const data = await readFile(file.hostPath).catch((error: Error) => {
      throw new RamifyError('TEMPLATE_BUILD_FAILED', `cannot read the agent's ${file.hostPath} (build @ramify/agent first): ${error.message}`, { step: 'files' });
    });
    // Without an addon the hash is the bundle's alone, as before this file existed.
    if (file.guestPath !== AGENT_GUEST_PATH) hash.update(`\0${file.guestPath}\0${data.length}\0`);
    hash.update(data);
  }
  return hash.digest('hex');
}
