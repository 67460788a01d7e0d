/**
 * TEST SUPPORT for the real private-network suites: a TCP and UDP echo server run INSIDE a real sandbox
 * (Python, in the base template) that records every peer it serves, and the probes the suites send from
 * one sandbox to another (by name or address). Test support only.
 */
import assert from 'node:assert/strict';
import type { SandboxShell, Probe, ProbeResult } from './real-egress-probe.js';

/** Port every suite's echo server listens on (TCP and UDP, all addresses). */
export const ECHO_PORT = 7100;
/** Where the echo server appends `tcp|udp <unix s> <peer address>` per connection or datagram. */
export const ECHO_HITS = '/tmp/echo-hits';

const ECHO_PY = String.raw`
import socket, sys, threading, time
port, out = int(sys.argv[1]), sys.argv[2]
def log(kind, peer):
    with open(out, 'a') as f: f.write(f'{kind} {time.time():.3f} {peer}\n')
def serve(c, a):
    log('tcp', a[0])
    try:
        while True:
            d = c.recv(4096)
            if not d: break
            c.sendall(d)
    except OSError: pass
    c.close()
def tcp():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('0.0.0.0', port)); s.listen(64)
    while True:
        c, a = s.accept(); threading.Thread(target=serve, args=(c, a), daemon=True).start()
threading.Thread(target=tcp, daemon=True).start()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(('0.0.0.0', port))
while True:
    d, a = u.recvfrom(4096); log('udp', a[0]); u.sendto(d, a)
`;

/** Start the echo server in `id` and wait until it answers on loopback. */
export async function startEcho(shell: SandboxShell, id: string): Promise<void> {
  await shell.install(id);
  await shell.put(id, '/opt/probe/echo.py', ECHO_PY);
  await shell.spawn(id, `python3 /opt/probe/echo.py ${ECHO_PORT} ${ECHO_HITS}`);
  for (let tries = 0; ; tries++) {
    const r = await shell.probe(id, [{ id: 'self', kind: 'tcp', host: '127.0.0.1', port: ECHO_PORT, send: 'hi', timeoutS: 1 }]);
    if (r.self?.recv === 'hi') return;
    assert.ok(tries < 30, `the echo server in ${id} did not start: ${JSON.stringify(r)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The peers the echo server in `id` has served (addresses), optionally only those after `sinceMs`. */
export async function echoPeers(shell: SandboxShell, id: string, sinceMs = 0): Promise<Array<{ kind: string; peer: string }>> {
  const text = (await shell.exec(id, `cat ${ECHO_HITS} 2>/dev/null || true`)).stdout;
  return text.split('\n').filter(Boolean).map((l) => l.split(' ')).filter(([, at]) => Number(at) * 1000 >= sinceMs).map(([kind = '', , peer = '']) => ({ kind, peer })).filter((p) => p.peer !== '127.0.0.1');
}

/** TCP (with an echo) and UDP probes from one sandbox to `host` (a name or an address) on the echo port. */
export function reachProbes(tag: string, host: string, timeoutS = 2): Probe[] {
  return [
    { id: `${tag}-tcp`, kind: 'tcp', host, port: ECHO_PORT, send: `${tag}`, timeoutS },
    { id: `${tag}-udp`, kind: 'udp', host, port: ECHO_PORT, send: `${tag}`, timeoutS },
  ];
}

/** Whether both probes of {@link reachProbes} `tag` got their echo back. */
export function reached(results: Record<string, ProbeResult>, tag: string): { tcp: boolean; udp: boolean } {
  return { tcp: results[`${tag}-tcp`]?.recv === tag, udp: results[`${tag}-udp`]?.recv === tag };
}

/** A name lookup through the sandbox's resolver (the policy resolver): its rcode and answers. */
export function nameProbe(tag: string, name: string): Probe {
  return { id: tag, kind: 'dns', server: '10.254.0.53', name };
}
