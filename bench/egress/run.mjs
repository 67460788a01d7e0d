#!/usr/bin/env node
// bench/egress: the added latency of a DNS lookup through Ramify's policy resolver against the same
// lookup straight to the upstream, in the same run (medians and p99). Runs entirely in namespaces it
// creates (the fake-internet rig, prefix `rmbe`), as root; removes them afterwards.
//   node bench/egress/run.mjs [--queries 500]
// Target (issue 3): resolver overhead <= 2 ms median.
import { parseArgs } from 'node:util';
import { PolicyDnsResolver } from '@ramify/network';
import { FakeInternet, queryDnsFrom } from '@ramify/network/testing';

const { values } = parseArgs({ options: { queries: { type: 'string', default: '500' } } });
const count = Number(values.queries);
const UPSTREAM = '198.51.100.153';
const zone = { 'www.example.com': { a: ['203.0.113.10'], ttl: 300 } };

const rig = await FakeInternet.start({ prefix: 'rmbe', web: [], echo: [], dns: { address: UPSTREAM }, zone });
let resolver;
try {
  const client = await rig.addClient('sbx');
  resolver = new PolicyDnsResolver({
    listenAddress: client.hostAddress,
    upstreams: [{ address: UPSTREAM }],
    sandboxForSource: (address) => (address === client.address ? { sandboxId: 'sbx_bench', allow: (name) => ({ allowed: name.endsWith('.example.com'), rule: '*.example.com' }) } : null),
    // Stands in for the enforcer's set update (measured separately by the enforcement benchmark).
    onAnswer: async () => {},
  });
  await resolver.start();
  const questions = Array.from({ length: count }, () => ({ name: 'www.example.com' }));
  // Interleave rounds so drift on this noisy machine hits both paths alike.
  const direct = [];
  const via = [];
  for (let round = 0; round < 5; round++) {
    const chunk = questions.slice(0, Math.ceil(count / 5));
    direct.push(...(await queryDnsFrom(client.netnsPath, chunk, { server: UPSTREAM })).map((r) => r.latencyMs));
    via.push(...(await queryDnsFrom(client.netnsPath, chunk, { server: client.hostAddress })).map((r) => r.latencyMs));
  }
  const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
  const row = (name, xs) => `${name}\t${pct(xs, 50).toFixed(3)}\t${pct(xs, 99).toFixed(3)}`;
  console.log(`bench/egress: ${direct.length} sequential UDP A queries per path from a sandbox-like namespace, ms`);
  console.log('path\tmedian\tp99');
  console.log(row('direct to upstream', direct));
  console.log(row('via policy resolver', via));
  const overhead = pct(via, 50) - pct(direct, 50);
  console.log(`resolver overhead (median): ${overhead.toFixed(3)} ms (target <= 2 ms: ${overhead <= 2 ? 'ok' : 'MISSED'})`);
} finally {
  await resolver?.close();
  await rig.teardown();
}
