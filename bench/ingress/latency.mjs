// bench/ingress helper, run as the ingress dialer's uid: latency of one request at a time on a kept-alive
// connection per path (performance.now(), sub-millisecond), the paths taken in turns of `block` requests
// (direct, bare proxy, ingress, direct, ...), so that load from outside the bench over the run (the machine
// is shared) falls on every path alike, while each block still measures a path kept warm by the requests
// before it, as a page's requests are. Prints one JSON line: p50 and p99 per path, ms.
//   node latency.mjs '{"paths":{"direct":{"url":...,"headers":{...}},...},"probes":500,"block":50}'
import { Agent, request } from 'node:http';
import { quantile } from '../support/stats.mjs';

const job = JSON.parse(process.argv[2]);
const paths = Object.entries(job.paths).map(([name, p]) => ({ name, ...p, target: new URL(p.url), agent: new Agent({ keepAlive: true, maxSockets: 1 }), samples: [] }));
const once = (p) => new Promise((resolve, reject) => {
  const t = performance.now();
  request({ host: p.target.hostname, port: p.target.port, path: p.target.pathname, headers: p.headers, agent: p.agent }, (res) => {
    res.resume();
    res.on('end', () => resolve(performance.now() - t));
  }).on('error', reject).end();
});
for (const p of paths) for (let i = 0; i < 20; i++) await once(p);
const blocks = Math.ceil(job.probes / job.block);
for (let b = 0; b < blocks; b++) {
  for (let k = 0; k < paths.length; k++) {
    const p = paths[(b + k) % paths.length];
    // The first request of a block wakes a path that sat idle while the others ran: not counted.
    await once(p);
    for (let i = 0; i < job.block; i++) p.samples.push(await once(p));
  }
}
const out = {};
for (const p of paths) {
  p.agent.destroy();
  out[p.name] = { p50: quantile(p.samples, 0.5), p99: quantile(p.samples, 0.99) };
}
console.log(JSON.stringify(out));
