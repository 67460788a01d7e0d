#!/usr/bin/env node
// bench/ingress (issue 10 targets in brackets), one run, the same Python server (HTTP/1.1 keep-alive,
// TCP_NODELAY: packages/daemon/src/real-ingress-servers.ts) in one gVisor sandbox:
//  1. requests/s through the ingress URL (token header) against straight to the sandbox's slot address
//     [ingress >= 0.8x direct] (load.mjs: autocannon, 10 connections, keep-alive to whatever it talks to,
//     the paths in turns of 2 s; the ingress reuses pooled upstream connections, see
//     docs/design/INGRESS.md), and p50/p99 latency of
//     one request at a time on a keep-alive connection [p50 added by the ingress <= 1 ms] (latency.mjs: the
//     paths in turns of 50 requests, so that the shared machine's load falls on all alike), with a bare
//     Node HTTP proxy as a third column (bare-proxy.mjs: the floor any user-space hop has on this machine).
//  2. time from the first request to a paused sandbox until its answer (wake on request) against
//     `POST /resume` alone [<= 1.2x].
// Its own daemon in-process (prefix `rmiw`, a temp data dir, ingress on a free loopback port), so nothing
// else is disturbed; as root; removes its sandboxes, namespaces and tables afterwards. Needs the packages
// built and the base rootfs (built once into the shared cache, as `npm test` does; or RAMIFY_TEST_ROOTFS).
// Run it under the real-tests lock: flock /tmp/ramify-real-tests.lock node bench/ingress/run.mjs
//   node bench/ingress/run.mjs [--duration 10] [--connections 10] [--turns 5] [--probes 500] [--block 50] [--wakes 5] [--rounds 3]
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { request } from 'node:http';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_INGRESS_UID, layoutForPrefix, slotAddresses } from '@ramify/network';
import { HTTP_SERVER_PY } from '../../packages/daemon/dist/real-ingress-servers.js';
import { until } from '../../packages/daemon/dist/real-test-support.js';
import { startBenchDaemon } from '../support/in-process-daemon.mjs';
import { upperMedian, verdict } from '../support/stats.mjs';

const { values } = parseArgs({ options: { duration: { type: 'string', default: '10' }, connections: { type: 'string', default: '10' }, probes: { type: 'string', default: '500' }, block: { type: 'string', default: '50' }, turns: { type: 'string', default: '5' }, wakes: { type: 'string', default: '5' }, rounds: { type: 'string', default: '3' } } });
const PREFIX = 'rmiw';
const root = new URL('../..', import.meta.url).pathname;

const { server, key, call, stop } = await startBenchDaemon({ prefix: PREFIX, name: 'ingress', options: { ingress: { host: '127.0.0.1', port: 0 } } });
try {
  const created = await call('POST', '/v1/sandboxes', { timeoutMs: 3_600_000, ports: [8000], cpuCount: 1 });
  if (created.status !== 201) throw new Error(JSON.stringify(created.json));
  const id = created.json.id;
  const put = (path, body) => fetch(`${server.url}/v1/sandboxes/${id}/files?path=${encodeURIComponent(path)}`, { method: 'PUT', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' }, body });
  await put('/root/srv.py', HTTP_SERVER_PY);
  await put('/root/www/index.html', 'hello from the sandbox\n');
  await call('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'python3 /root/srv.py 8000', background: true });
  const { host, token } = (await call('GET', `/v1/sandboxes/${id}/ports/8000/url`)).json;
  const ingressPort = Number(server.ingress.address.split(':').pop());
  // node:http, not fetch: fetch does not send a Host header of the caller's.
  const ingressGet = () => new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port: ingressPort, path: '/index.html', headers: { host, 'x-ramify-access-token': token } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, text: async () => '' }));
    }).on('error', reject).end();
  });
  await until(async () => (await ingressGet().catch(() => ({ status: 0 }))).status === 200, 'the server answers through the ingress');
  const slot = (await server.core.store.getSandbox(id)).slot;
  const { slotAddress } = slotAddresses(layoutForPrefix(PREFIX), slot);

  // Asynchronously: the daemon (the ingress) runs in this process and must keep serving meanwhile.
  const helper = async (file, job) => {
    const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'bench/ingress', file), JSON.stringify(job)], { uid: DEFAULT_INGRESS_UID, gid: DEFAULT_INGRESS_UID, encoding: 'utf8', cwd: root, timeout: 300_000 });
    return JSON.parse(stdout.trim().split('\n').pop());
  };
  const throughput = (paths) => helper('load.mjs', { paths, durationS: Number(values.duration), connections: Number(values.connections), turns: Number(values.turns) });
  // The raw mechanism: one bare Node HTTP hop in a process of its own (bare-proxy.mjs), to tell what any
  // user-space proxy costs on this machine from what the ingress adds on top of it.
  const bare = spawn(process.execPath, [join(root, 'bench/ingress/bare-proxy.mjs'), slotAddress, '8000'], { uid: DEFAULT_INGRESS_UID, gid: DEFAULT_INGRESS_UID, stdio: ['ignore', 'pipe', 'inherit'] });
  const barePort = await new Promise((resolve, reject) => {
    bare.stdout.once('data', (d) => resolve(Number(String(d).trim())));
    bare.once('exit', (code) => reject(new Error(`bare-proxy.mjs exited with ${code}`)));
  });
  // Rounds, rotating which path goes first, so that load from outside the bench (2 cores, shared)
  // falls on every column alike; each target is judged on the median of its per-round figures.
  const rounds = [];
  try {
    for (let i = 0; i < Number(values.rounds); i++) {
      const paths = {
        direct: { url: `http://${slotAddress}:8000/index.html`, headers: { host: `${slotAddress}:8000` } },
        bare: { url: `http://127.0.0.1:${barePort}/index.html`, headers: { host: `${slotAddress}:8000` } },
        viaIngress: { url: `http://127.0.0.1:${ingressPort}/index.html`, headers: { host, 'x-ramify-access-token': token } },
      };
      // Each round starts the turns with another path.
      const order = Object.keys(paths);
      const rotated = Object.fromEntries(order.map((_, k) => order[(i + k) % order.length]).map((name) => [name, paths[name]]));
      const got = await throughput(rotated);
      const latency = await helper('latency.mjs', { paths, probes: Number(values.probes), block: Number(values.block) });
      for (const name of order) Object.assign(got[name], latency[name]);
      const { direct, bare: viaBare, viaIngress } = got;
      rounds.push({ load: loadavg()[0], direct, viaBare, viaIngress, ratio: viaIngress.rps / direct.rps, added: viaIngress.p50 - direct.p50, bareAdded: viaBare.p50 - direct.p50 });
    }
  } finally {
    bare.kill();
  }
  console.log(`same server (python3 http.server, TCP_NODELAY, in gVisor, 1 cpu), ${values.rounds} rounds of: ${values.connections} connections x ${values.duration} s per path (in turns of ${Number(values.duration) / Number(values.turns)} s), then ${values.probes} sequential requests per path on one keep-alive connection each, the paths in turns of ${values.block} (latency)`);
  const row = (m) => `${m.rps.toFixed(0)} req/s   p50 ${m.p50.toFixed(3)} ms   p99 ${m.p99.toFixed(3)} ms   (non-2xx ${m.non2xx}, errors ${m.errors})`;
  for (const [i, r] of rounds.entries()) {
    console.log(`  round ${i + 1} (load average ${r.load.toFixed(1)}): direct to ${slotAddress}:8000   ${row(r.direct)}`);
    console.log(`           through a bare Node proxy  ${row(r.viaBare)}   (p50 +${r.bareAdded.toFixed(3)} ms)`);
    console.log(`           through the ingress URL    ${row(r.viaIngress)}   (${r.ratio.toFixed(2)}x, p50 +${r.added.toFixed(3)} ms)`);
  }
  const bareAdded = upperMedian(rounds.map((r) => r.bareAdded));
  const ratio = upperMedian(rounds.map((r) => r.ratio));
  const added = upperMedian(rounds.map((r) => r.added));
  console.log(`throughput ingress/direct: median ${ratio.toFixed(2)}x (target >= 0.8x: ${verdict(ratio >= 0.8)})`);
  console.log(`p50 added by the ingress: median ${added.toFixed(3)} ms (target <= 1 ms: ${verdict(added <= 1)})`);
  console.log(`  of which a bare Node HTTP hop adds ${bareAdded.toFixed(3)} ms (the raw mechanism), the ingress's own work ${(added - bareAdded).toFixed(3)} ms`);

  const wakes = [];
  const resumes = [];
  // A refusal is printed with its reason (the endpoints that held it up), not only a time-out.
  let lastRefusal = null;
  const pause = async () => until(async () => {
    const reply = await call('POST', `/v1/sandboxes/${id}/pause`);
    if (reply.json?.state === 'paused') return true;
    lastRefusal = reply.json;
    console.error(`pause refused: ${JSON.stringify(reply.json)}`);
    return false;
  }, 'the sandbox pauses', 60_000).catch((err) => { throw new Error(`${err.message}; last refusal: ${JSON.stringify(lastRefusal)}`); });
  for (let i = 0; i < Number(values.wakes); i++) {
    await pause();
    let t = performance.now();
    const r = await ingressGet();
    await r.text();
    wakes.push(performance.now() - t);
    if (r.status !== 200) throw new Error(`wake request answered ${r.status}`);
    await pause();
    t = performance.now();
    const resumed = await call('POST', `/v1/sandboxes/${id}/resume`);
    resumes.push(performance.now() - t);
    if (resumed.json?.state !== 'running') throw new Error(JSON.stringify(resumed.json));
  }
  const wake = upperMedian(wakes);
  const resume = upperMedian(resumes);
  console.log(`wake on request (first request to a paused sandbox until its answer): median ${wake.toFixed(0)} ms of ${wakes.length}`);
  console.log(`resume alone (POST /resume): median ${resume.toFixed(0)} ms`);
  console.log(`wake/resume: ${(wake / resume).toFixed(2)}x (target <= 1.2x: ${verdict(wake / resume <= 1.2)})`);
} finally {
  await stop();
}
