/**
 * Connected TCP endpoints on non-loopback addresses, read from /proc/net/tcp and /proc/net/tcp6. Each
 * one blocks a gVisor checkpoint (including TIME_WAIT), so the host asks before pausing.
 */
import { readFile } from 'node:fs/promises';

/** Kernel TCP states by their hex code in /proc/net/tcp. */
export const TCP_STATES: Readonly<Record<string, string>> = {
  '01': 'ESTABLISHED',
  '02': 'SYN_SENT',
  '03': 'SYN_RECV',
  '04': 'FIN_WAIT1',
  '05': 'FIN_WAIT2',
  '06': 'TIME_WAIT',
  '07': 'CLOSE',
  '08': 'CLOSE_WAIT',
  '09': 'LAST_ACK',
  '0A': 'LISTEN',
  '0B': 'CLOSING',
  '0C': 'NEW_SYN_RECV',
};

export interface TcpEndpoint {
  local: { address: string; port: number };
  remote: { address: string; port: number };
  state: string;
}

/** Decode one 32-bit word as the kernel prints it (host byte order, little-endian here) to 4 bytes. */
function wordBytes(hex8: string): number[] {
  const v = Number.parseInt(hex8, 16);
  return [v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff];
}

/** Decode a /proc/net/tcp{,6} address `HEX:PORT`; IPv4-mapped IPv6 addresses come out as dotted IPv4. */
export function decodeProcAddress(field: string): { address: string; port: number } {
  const [hex, portHex] = field.split(':');
  const port = Number.parseInt(portHex, 16);
  if (hex.length === 8) return { address: wordBytes(hex).join('.'), port };
  const bytes: number[] = [];
  for (let i = 0; i < 32; i += 8) bytes.push(...wordBytes(hex.slice(i, i + 8)));
  const mapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  if (mapped) return { address: `::ffff:${bytes.slice(12).join('.')}`, port };
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] << 8) | bytes[i + 1]).toString(16));
  return { address: compressIPv6(groups), port };
}

function compressIPv6(groups: string[]): string {
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen && j - i > 1) [bestStart, bestLen] = [i, j - i];
    i = j;
  }
  if (bestStart < 0) return groups.join(':');
  return `${groups.slice(0, bestStart).join(':')}::${groups.slice(bestStart + bestLen).join(':')}`;
}

/** Parse the text of /proc/net/tcp or /proc/net/tcp6 (header line skipped, malformed lines ignored). */
export function parseProcNetTcp(text: string): TcpEndpoint[] {
  const out: TcpEndpoint[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4 || !f[0].endsWith(':') || !f[1].includes(':')) continue;
    out.push({ local: decodeProcAddress(f[1]), remote: decodeProcAddress(f[2]), state: TCP_STATES[f[3].toUpperCase()] ?? `UNKNOWN_${f[3]}` });
  }
  return out;
}

/** True for 127.0.0.0/8, ::1 and ::ffff:127.x. */
export function isLoopback(address: string): boolean {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

function formatEndpoint(e: { address: string; port: number }): string {
  const addr = e.address.startsWith('::ffff:') && e.address.includes('.') ? e.address.slice(7) : e.address;
  return addr.includes(':') ? `[${addr}]:${e.port}` : `${addr}:${e.port}`;
}

/**
 * Endpoints that are not listening and whose local address is not loopback, as `local -> remote STATE`,
 * less the host's own established connections to the agent's TCP port `hostChannelPort` (the host closes
 * them before every checkpoint; one is what asks). Any other state on that port is reported: a half-made
 * connection is what gVisor 20240729 cannot checkpoint.
 */
export function reportableEndpoints(endpoints: TcpEndpoint[], hostChannelPort?: number): string[] {
  const hostChannel = (e: TcpEndpoint): boolean => e.local.port === hostChannelPort && e.state === 'ESTABLISHED';
  return endpoints
    .filter((e) => e.state !== 'LISTEN' && !isLoopback(e.local.address) && !hostChannel(e))
    .map((e) => `${formatEndpoint(e.local)} -> ${formatEndpoint(e.remote)} ${e.state}`);
}

/** Read /proc/net/tcp and /proc/net/tcp6 (a missing file counts as empty); see {@link reportableEndpoints}. */
export async function networkEndpoints(procNet = '/proc/net', hostChannelPort?: number): Promise<{ endpoints: string[] }> {
  const texts = await Promise.all(['tcp', 'tcp6'].map((f) => readFile(`${procNet}/${f}`, 'utf8').catch(() => '')));
  return { endpoints: texts.flatMap((t) => reportableEndpoints(parseProcNetTcp(t), hostChannelPort)) };
}
