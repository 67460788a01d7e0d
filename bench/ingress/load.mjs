// bench/ingress helper, run as the ingress dialer's uid (the only one the ingress firewall lets reach a slot
// address, so the direct figures are possible at all): throughput with autocannon against one URL. Prints
// one JSON line.
//   node load.mjs '{"url":"http://10.x.y.z:8000/index.html","headers":{...},"durationS":10,"connections":10}'
import autocannon from 'autocannon';

const job = JSON.parse(process.argv[2]);
const load = await autocannon({ url: job.url, headers: job.headers, connections: job.connections, duration: job.durationS });
console.log(JSON.stringify({ rps: load.requests.average, non2xx: load.non2xx, errors: load.errors }));
