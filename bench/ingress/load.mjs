// bench/ingress helper, run as the ingress dialer's uid (the only one the ingress firewall lets reach a slot
// address, so the direct figures are possible at all): throughput with autocannon, then latency from a
// sequential probe on one keep-alive connection (performance.now(), sub-millisecond). Prints one JSON line.
//   node load.mjs '{"url":"http://10.x.y.z:8000/index.html","headers":{...},"durationS":10,"connections":10,"probes":500}'
import { Agent, request } from 'node:http';
import autocannon from 'autocannon';

const job = JSON.parse(process.argv[2]);
const load = await autocannon({ url: job.url, headers: job.headers, connections: job.connections, duration: job.durationS });
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
const target = new URL(job.url);
const once = () => new Promise((resolve, reject) => {
  const t = performance.now();
  request({ host: target.hostname, port: target.port, path: target.pathname, headers: job.headers, agent }, (res) => {
    res.resume();
    res.on('end', () => resolve(performance.now() - t));
  }).on('error', reject).end();
});
for (let i = 0; i < 20; i++) await once();
const latencies = [];
for (let i = 0; i < job.probes; i++) latencies.push(await once());
agent.destroy();
latencies.sort((a, b) => a - b);
const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))];
console.log(JSON.stringify({ rps: load.requests.average, non2xx: load.non2xx, errors: load.errors, p50: pct(50), p99: pct(99) }));
