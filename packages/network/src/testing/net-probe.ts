/**
 * Client probes run inside a test namespace (a real process under `nsenter`, so the traffic leaves with
 * the namespace's source address): HTTP and HTTPS requests with a chosen Host/SNI to a chosen address,
 * plain TCP connects, one UDP datagram, one ICMP echo request.
 */
import { fileURLToPath } from 'node:url';
import { RamifyError } from '@ramify/contracts';
import { run } from '../exec.js';

/** What to try. Addresses are IPv4; `timeoutMs` (default 3000) bounds the whole attempt. */
export type NetProbe =
  /** GET `path` (default `/`) with header `Host: host`. */
  | { kind: 'http'; address: string; port?: number; host: string; path?: string; timeoutMs?: number }
  /** GET over TLS; `servername` is the SNI (null: none sent), `ca` the PEM to trust. */
  | { kind: 'https'; address: string; port?: number; host: string; servername: string | null; ca: string; path?: string; timeoutMs?: number }
  /** TCP connect, then close at once. */
  | { kind: 'tcp'; address: string; port: number; timeoutMs?: number }
  /** Send one datagram (nothing is awaited). */
  | { kind: 'udp'; address: string; port: number; payload?: string; timeoutMs?: number };

/** How a probe ended. `ok`: HTTP(S) response received, TCP connected, datagram sent. */
export interface NetProbeResult {
  outcome: 'ok' | 'failed';
  /** HTTP status. */
  status?: number;
  body?: string;
  /** Error code or message when `failed` (`ECONNREFUSED`, `TIMEOUT`, `ECONNRESET`, ...). */
  error?: string;
}

const SCRIPT = fileURLToPath(new URL('./net-probe-script.js', import.meta.url));

/** Run `probe` from inside the namespace at `netnsPath`. Rejects `RUNTIME_ERROR` when the client process fails. */
export async function probeFrom(netnsPath: string, probe: NetProbe): Promise<NetProbeResult> {
  const r = await run(['nsenter', `--net=${netnsPath}`, process.execPath, SCRIPT], JSON.stringify(probe));
  if (r.code !== 0) throw new RamifyError('RUNTIME_ERROR', `probe client failed (exit ${r.code}): ${r.stderr.trim()}`);
  return JSON.parse(r.stdout) as NetProbeResult;
}

const PING = `import socket, struct, sys
def csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
ident, seq = int(sys.argv[2]) & 0xffff, int(sys.argv[3]) & 0xffff
hdr = struct.pack('!BBHHH', 8, 0, 0, ident, seq) + b'ramify-probe'
pkt = struct.pack('!BBHHH', 8, 0, csum(hdr), ident, seq) + b'ramify-probe'
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
s.settimeout(float(sys.argv[4]))
s.sendto(pkt, (sys.argv[1], 0))
try:
    while True:
        data, addr = s.recvfrom(2048)
        ihl = (data[0] & 15) * 4
        t, _, _, i, q = struct.unpack('!BBHHH', data[ihl:ihl + 8])
        if addr[0] == sys.argv[1] and t == 0 and i == ident and q == seq:
            print('reply'); break
except socket.timeout:
    print('timeout')
`;

/**
 * Send one ICMP echo request from inside the namespace (python3, raw socket) and wait up to `timeoutMs`
 * (default 1500) for the reply. Resolves `reply` or `timeout`; rejects `RUNTIME_UNAVAILABLE` without python3.
 */
export async function pingFrom(netnsPath: string, address: string, options: { id?: number; sequence?: number; timeoutMs?: number } = {}): Promise<'reply' | 'timeout'> {
  const id = options.id ?? (process.pid & 0xffff);
  const r = await run(['nsenter', `--net=${netnsPath}`, 'python3', '-c', PING, address, String(id), String(options.sequence ?? 1), String((options.timeoutMs ?? 1500) / 1000)]);
  if (r.code !== 0) throw new RamifyError('RUNTIME_ERROR', `ping client failed (exit ${r.code}): ${r.stderr.trim()}`);
  return r.stdout.trim() === 'reply' ? 'reply' : 'timeout';
}
