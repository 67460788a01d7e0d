/**
 * Why a connection to a sandbox's port was refused: the ingress asks the sandbox (its agent reads
 * /proc/net/tcp and /proc/net/tcp6 inside it) which addresses listen on the port, instead of guessing.
 */
import type { Core } from '../context.js';
import { agentFor } from '../sandbox/agent-access.js';

/** `none`: nothing listens on the port; `loopback-only`: only on 127.0.0.0/8 or ::1; `reachable`: on an address the ingress reaches. */
export type ListenerDiagnosis = 'none' | 'loopback-only' | 'reachable';

const LISTEN = '0A';

/**
 * The local addresses (hex, as /proc/net/tcp writes them) of sockets listening on `port` in the text of
 * /proc/net/tcp or /proc/net/tcp6 (header and malformed lines skipped).
 */
export function listeningAddresses(procNetTcp: string, port: number): string[] {
  const found: string[] = [];
  for (const line of procNetTcp.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    const [address, portHex] = (fields[1] ?? '').split(':');
    if (fields[3] === LISTEN && address && portHex && Number.parseInt(portHex, 16) === port) found.push(address);
  }
  return found;
}

/** Whether a /proc/net/tcp{,6} address (hex, in the kernel's byte order) is a loopback address. */
export function isLoopbackHex(address: string): boolean {
  if (address.length === 8) return address.slice(6, 8) === '7F'; // 127.x.x.x, little-endian
  if (address.length === 32) {
    if (address === '00000000000000000000000001000000') return true; // ::1
    return address.startsWith('0000000000000000FFFF0000') && address.slice(30, 32) === '7F'; // ::ffff:127.x
  }
  return false;
}

/** What listens on `port`, from the texts of /proc/net/tcp and /proc/net/tcp6. */
export function diagnoseListeners(tables: readonly string[], port: number): ListenerDiagnosis {
  const addresses = tables.flatMap((t) => listeningAddresses(t, port));
  if (addresses.length === 0) return 'none';
  return addresses.every(isLoopbackHex) ? 'loopback-only' : 'reachable';
}

/**
 * Ask the running sandbox what listens on `port`.
 * @throws RamifyError as `agentFor` (`INVALID_STATE` when not running, `AGENT_UNREACHABLE`, ...).
 */
export async function sandboxListeners(core: Core, sandboxId: string, port: number): Promise<ListenerDiagnosis> {
  const session = await agentFor(core, sandboxId);
  const read = async (path: string): Promise<string> => {
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of session.readFile(path)) chunks.push(Buffer.from(chunk));
    } catch {
      return '';
    }
    return Buffer.concat(chunks).toString('utf8');
  };
  return diagnoseListeners([await read('/proc/net/tcp'), await read('/proc/net/tcp6')], port);
}
