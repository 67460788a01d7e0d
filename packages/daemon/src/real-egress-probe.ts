/**
 * TEST SUPPORT for the real-egress suites: network probes run INSIDE a real sandbox by a small Python
 * program (python3 is in the base template), many at once (one thread each), so a batch of probes that
 * are expected to time out costs one timeout, not one per probe. Also a long-running connection
 * ("hold") and a connect poller ("poll") for the live-update tests. Test support only.
 */
import assert from 'node:assert/strict';
import type { ApiReply } from './real-test-support.js';

/** One probe; `id` names its result. Every probe has a timeout (`timeoutS`, default 3). */
export type Probe = { id: string; timeoutS?: number; src?: string } & (
  /** TCP connect (IPv4 or, with `tcp6`, IPv6); with `send`, send it and read the echo. */
  | { kind: 'tcp' | 'tcp6'; host: string; port: number; send?: string }
  /** UDP datagram; ok when something answers. */
  | { kind: 'udp'; host: string; port: number; send: string }
  /** Plain HTTP/1.1 GET to `host` (address or name) with the given Host header; result `status`. */
  | { kind: 'http'; host: string; port?: number; hostHeader: string }
  /** TLS (no certificate check) to `host` with SNI `sni`, then a GET; result `status`. */
  | { kind: 'tls'; host: string; port?: number; sni: string; hostHeader?: string }
  /** A DNS question sent to `server` itself (not through resolv.conf); result `rcode`, `answers`. */
  | { kind: 'dns'; server: string; port?: number; name: string; qtype?: 'A' | 'AAAA' | 'TXT'; transport?: 'udp' | 'tcp' }
  /** ICMP echo through a ping socket (raw sockets are refused in gVisor without --net-raw). */
  | { kind: 'icmp'; host: string }
  /** One UDP datagram with a forged IPv4 source `spoofSource`, through a raw socket (gVisor refuses these without --net-raw). */
  | { kind: 'raw'; host: string; port: number; spoofSource: string; send: string }
  /** getaddrinfo through the sandbox's resolver configuration (/etc/hosts, resolv.conf); result `addresses`. */
  | { kind: 'resolve'; name: string }
);

/** What a probe saw: `ok` when it connected/got an answer; `error` (e.g. `TimeoutError: timed out`) otherwise. */
export interface ProbeResult {
  ok: boolean;
  error?: string;
  recv?: string;
  status?: number;
  rcode?: string;
  answers?: string[];
  addresses?: string[];
}

const PROBE_PY = String.raw`
import json, random, socket, ssl, struct, sys
from concurrent.futures import ThreadPoolExecutor

def dns_query(name, qtype):
    q = b''.join(bytes([len(p)]) + p.encode() for p in name.rstrip('.').split('.')) + b'\x00'
    return struct.pack('!HHHHHH', random.randint(0, 65535), 0x0100, 1, 0, 0, 0) + q + struct.pack('!HH', {'A': 1, 'AAAA': 28, 'TXT': 16}[qtype], 1)

def skip_name(msg, i):
    while True:
        n = msg[i]
        if n == 0: return i + 1
        if n & 0xC0 == 0xC0: return i + 2
        i += n + 1

def dns_parse(msg):
    _, flags, qd, an, _, _ = struct.unpack('!HHHHHH', msg[:12])
    i = 12
    for _ in range(qd): i = skip_name(msg, i) + 4
    answers = []
    for _ in range(an):
        i = skip_name(msg, i)
        t, _, _, ln = struct.unpack('!HHIH', msg[i:i + 10]); i += 10
        rd = msg[i:i + ln]; i += ln
        if t == 1: answers.append(socket.inet_ntop(socket.AF_INET, rd))
        elif t == 28: answers.append(socket.inet_ntop(socket.AF_INET6, rd))
    codes = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED']
    return {'rcode': codes[flags & 15] if flags & 15 < 6 else str(flags & 15), 'answers': answers}

def sock(p, family=socket.AF_INET, kind=socket.SOCK_STREAM, proto=0):
    s = socket.socket(family, kind, proto); s.settimeout(p.get('timeoutS', 3))
    if p.get('src'): s.bind((p['src'], 0))
    return s

def status_of(f):
    line = f.readline().decode(errors='replace').strip()
    if not line: raise ConnectionError('closed without a response')
    return {'status': int(line.split()[1])}

def run(p):
    k = p['kind']
    if k in ('tcp', 'tcp6'):
        s = sock(p, socket.AF_INET6 if k == 'tcp6' else socket.AF_INET); s.connect((p['host'], p['port']))
        if 'send' not in p: return {}
        s.sendall(p['send'].encode()); return {'recv': s.recv(4096).decode(errors='replace')}
    if k == 'udp':
        s = sock(p, kind=socket.SOCK_DGRAM); s.sendto(p['send'].encode(), (p['host'], p['port']))
        return {'recv': s.recv(4096).decode(errors='replace')}
    if k == 'http':
        s = sock(p); s.connect((p['host'], p.get('port', 80)))
        s.sendall(f"GET / HTTP/1.1\r\nHost: {p['hostHeader']}\r\nConnection: close\r\n\r\n".encode())
        return status_of(s.makefile('rb'))
    if k == 'tls':
        ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
        s = sock(p); s.connect((p['host'], p.get('port', 443)))
        t = ctx.wrap_socket(s, server_hostname=p['sni'])
        t.sendall(f"GET / HTTP/1.1\r\nHost: {p.get('hostHeader', p['sni'])}\r\nConnection: close\r\n\r\n".encode())
        return status_of(t.makefile('rb'))
    if k == 'dns':
        q = dns_query(p['name'], p.get('qtype', 'A')); addr = (p['server'], p.get('port', 53))
        if p.get('transport') == 'tcp':
            s = sock(p); s.connect(addr); s.sendall(struct.pack('!H', len(q)) + q)
            f = s.makefile('rb'); msg = f.read(struct.unpack('!H', f.read(2))[0])
        else:
            s = sock(p, kind=socket.SOCK_DGRAM); s.sendto(q, addr); msg = s.recv(4096)
        return dns_parse(msg)
    if k == 'icmp':
        s = sock(p, kind=socket.SOCK_DGRAM, proto=socket.IPPROTO_ICMP)
        s.sendto(struct.pack('!BBHHH', 8, 0, 0, 0, 1) + b'ramify', (p['host'], 0)); s.recv(1024); return {}
    if k == 'raw':
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        payload = p['send'].encode(); udp = struct.pack('!HHHH', 40000, p['port'], 8 + len(payload), 0) + payload
        ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0, socket.inet_aton(p['spoofSource']), socket.inet_aton(p['host']))
        s.sendto(ip + udp, (p['host'], 0)); return {}
    if k == 'resolve':
        return {'addresses': sorted({a[4][0] for a in socket.getaddrinfo(p['name'], None, socket.AF_UNSPEC, socket.SOCK_STREAM)})}
    raise ValueError('unknown probe kind ' + k)

def attempt(p):
    try:
        r = run(p); r['ok'] = True
    except Exception as e:
        r = {'ok': False, 'error': f'{type(e).__name__}: {e}'}
    return p['id'], r

probes = json.load(open(sys.argv[1]))
with ThreadPoolExecutor(max_workers=max(1, len(probes))) as pool:
    print(json.dumps(dict(pool.map(attempt, probes))))
`;

/**
 * Long-running helpers, started in the background:
 * - `hold HOST PORT OUT SECS`: one TCP connection; sends a byte every ~50 ms and appends `echo <unix s>`
 *   to OUT for every echo received (`connected`/`error` lines too), for SECS seconds.
 * - `poll HOST PORT OUT SECS`: every 50 ms a new connect attempt (name resolved each time, 0.5 s
 *   timeout); appends `open <unix s>` at the first success, then stops.
 * - `listen ADDR PORT OUT 0`: TCP and UDP listener; appends `tcp|udp <unix s> <peer>` per connection/datagram, forever.
 */
const LIVE_PY = String.raw`
import socket, sys, threading, time
mode, host, port, out, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
end = time.time() + secs
if mode == 'hold':
    with open(out, 'a', buffering=1) as f:
        s = socket.create_connection((host, port), timeout=3); s.settimeout(0.2)
        f.write(f'connected {time.time():.3f}\n')
        while time.time() < end:
            try:
                s.sendall(b'x')
                if s.recv(64): f.write(f'echo {time.time():.3f}\n')
            except socket.timeout: pass
            except OSError as e: f.write(f'error {time.time():.3f} {e}\n'); break
            time.sleep(0.05)
elif mode == 'listen':
    def tcp():
        s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((host, port)); s.listen(16)
        while True:
            c, a = s.accept(); open(out, 'a').write(f'tcp {time.time():.3f} {a[0]}\n'); c.close()
    threading.Thread(target=tcp, daemon=True).start()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((host, port))
    while True:
        _, a = u.recvfrom(4096); open(out, 'a').write(f'udp {time.time():.3f} {a[0]}\n')
else:
    done = threading.Event()
    def attempt():
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            if not done.is_set():
                done.set(); open(out, 'a').write(f'open {time.time():.3f}\n')
        except OSError: pass
    while not done.is_set() and time.time() < end:
        threading.Thread(target=attempt, daemon=True).start(); time.sleep(0.05)
    time.sleep(0.6)
`;

type Call = (method: string, path: string, body?: unknown) => Promise<ApiReply>;

/** Drives sandboxes of one daemon through its API: shell commands, file uploads, probes. */
export class SandboxShell {
  private readonly installed = new Set<string>();

  /** `url`/`key` are read on every call (a restarted daemon is followed). */
  constructor(private readonly call: Call, private readonly url: () => string, private readonly key: () => string) {}

  /** Run `cmd` (bash) in the sandbox; asserts the API accepted it. */
  async exec(id: string, cmd: string, timeoutMs = 30_000): Promise<{ exitCode: number; stdout: string; stderr: string }> {
    const r = await this.call('POST', `/v1/sandboxes/${id}/commands`, { cmd, timeoutMs });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    return { exitCode: r.json.exitCode as number, stdout: r.json.stdout as string, stderr: r.json.stderr as string };
  }

  /** Like {@link exec}, asserting exit code 0; resolves with stdout. */
  async sh(id: string, cmd: string): Promise<string> {
    const r = await this.exec(id, cmd);
    assert.equal(r.exitCode, 0, `'${cmd}' failed: ${r.stderr}`);
    return r.stdout;
  }

  /** Start `cmd` in the background (returns at once). */
  async spawn(id: string, cmd: string): Promise<void> {
    const r = await this.call('POST', `/v1/sandboxes/${id}/commands`, { cmd, background: true, timeoutMs: 0 });
    assert.equal(r.status, 200, JSON.stringify(r.json));
  }

  /** Upload `content` to `path` in the sandbox. */
  async put(id: string, path: string, content: string): Promise<void> {
    const res = await fetch(`${this.url()}/v1/sandboxes/${id}/files?path=${encodeURIComponent(path)}`, {
      method: 'PUT', headers: { authorization: `Bearer ${this.key()}`, 'content-type': 'application/octet-stream' }, body: content,
    });
    assert.equal(res.status, 200, await res.text());
  }

  /** Install the probe programs (once per sandbox id). */
  async install(id: string): Promise<void> {
    if (this.installed.has(id)) return;
    await this.put(id, '/opt/probe/probe.py', PROBE_PY);
    await this.put(id, '/opt/probe/live.py', LIVE_PY);
    this.installed.add(id);
  }

  /** Run every probe at once inside the sandbox; resolves with the results by id. */
  async probe(id: string, probes: readonly Probe[]): Promise<Record<string, ProbeResult>> {
    await this.install(id);
    const file = `/tmp/probes-${Date.now()}-${Math.random().toString(36).slice(2)}.json`;
    await this.put(id, file, JSON.stringify(probes));
    const out = await this.sh(id, `python3 /opt/probe/probe.py ${file}`);
    return JSON.parse(out.trim().split('\n').pop() ?? '{}') as Record<string, ProbeResult>;
  }

  /** Start `live.py` (`hold`, `poll` or `listen`, see its docs) in the background, writing to `out`. */
  async live(id: string, mode: 'hold' | 'poll' | 'listen', target: { host: string; port: number }, out: string, seconds: number): Promise<void> {
    await this.install(id);
    await this.spawn(id, `python3 /opt/probe/live.py ${mode} ${target.host} ${target.port} ${out} ${seconds}`);
  }

  /** The `<word> <unix seconds>` lines of a live.py output file, as `{ word, atMs }`. */
  async liveLines(id: string, out: string): Promise<Array<{ word: string; atMs: number; rest: string }>> {
    const text = (await this.exec(id, `cat ${out} 2>/dev/null || true`)).stdout;
    return text.split('\n').filter(Boolean).map((line) => {
      const [word = '', at = '0', ...rest] = line.split(' ');
      return { word, atMs: Math.round(Number(at) * 1000), rest: rest.join(' ') };
    });
  }
}
