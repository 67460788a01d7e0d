// bench/ingress helper, run as the ingress dialer's uid (the only one the ingress firewall lets reach a slot
// address, so the direct figures are possible at all): throughput with autocannon per path, the paths in
// turns (`turns` bursts of durationS/turns seconds each, the order rotating), so that load from outside the
// bench falls on every path alike, as latency.mjs does for latency. Prints one JSON line: requests/s per
// path (all its requests over all its seconds), non-2xx answers and errors.
//   node load.mjs '{"paths":{"direct":{"url":...,"headers":{...}},...},"durationS":10,"connections":10,"turns":5}'
import autocannon from 'autocannon';

const job = JSON.parse(process.argv[2]);
const names = Object.keys(job.paths);
const turns = Math.max(1, job.turns ?? 1);
const seconds = job.durationS / turns;
const out = Object.fromEntries(names.map((n) => [n, { requests: 0, seconds: 0, non2xx: 0, errors: 0 }]));
for (let t = 0; t < turns; t++) {
  for (let k = 0; k < names.length; k++) {
    const name = names[(t + k) % names.length];
    const { url, headers } = job.paths[name];
    const load = await autocannon({ url, headers, connections: job.connections, duration: seconds });
    Object.assign(out[name], { requests: out[name].requests + load.requests.total, seconds: out[name].seconds + seconds, non2xx: out[name].non2xx + load.non2xx, errors: out[name].errors + load.errors });
  }
}
console.log(JSON.stringify(Object.fromEntries(names.map((n) => [n, { rps: out[n].requests / out[n].seconds, non2xx: out[n].non2xx, errors: out[n].errors }]))));
