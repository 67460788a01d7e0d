#!/usr/bin/env node
// bench/networks, in one run (issue 12 targets in brackets):
//  1. Between two gVisor sandboxes on one private network (a real daemon, child process, prefix `rbnw`):
//     TCP round-trip latency (1-byte ping-pong, sequential) and throughput (one connection, 64 KiB writes
//     for a few seconds), against the same program between two raw network namespaces joined by one veth
//     (made here). Ratios printed [throughput >= 0.7x the veth's]. A third row splits the cost: the same
//     program with the kernel's TCP stack in two sandbox-shaped slots (prefix `rbnx`: router namespaces,
//     host veths, the egress table with the pair of the same network), so the network path is measured
//     without gVisor's netstack. Two more rows bound what any change to the network can give: TCP over one
//     sandbox's loopback (no link), and a pipe between two processes in one sandbox against the same pipe on
//     the host (no network at all). `netstack-knobs.mjs` measures runsc's network options and the MTU.
//  2. Attach to reachable at 50 sandboxes x 5 networks [p99 <= 200 ms]: 50 sandboxes (forks of one; a few
//     running, the rest paused), each on two of the five networks (20 members per network). Repeatedly a
//     running sandbox is attached live to a network it is not on while a running member of that network
//     tries to connect to it every 5 ms; the figure is the time from the attach call being sent to the
//     first connection that succeeded (measured inside the sandbox, same host clock), then it is detached.
// Runs in namespaces it creates, as root; removes everything afterwards. Needs the packages built
// (`npm run build`) and the base rootfs (as `npm test` builds it; or set RAMIFY_TEST_ROOTFS).
//   node bench/networks/run.mjs [--sandboxes 50] [--networks 5] [--running 6] [--attaches 60] [--rtts 2000] [--seconds 4]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { NamespaceNetwork, layoutForPrefix, run, runChecked, startHostEgress } from '@ramify/network';
import { OPEN_EGRESS_POLICY } from '@ramify/core';
import { FakeInternet } from '@ramify/network/testing';
import { NETBENCH_PY } from './netbench-py.mjs';
import { mean, quantile, verdict } from '../support/stats.mjs';
import { apiCaller } from '../../packages/daemon/dist/real-test-support.js';
import { SandboxShell } from '../../packages/daemon/dist/real-egress-probe.js';
import { assertSlotRangeFree, ChildDaemon, forceCleanup, leftovers, slotOf } from '../../packages/daemon/dist/real-egress-support.js';

const { values } = parseArgs({
  options: {
    sandboxes: { type: 'string', default: '50' }, networks: { type: 'string', default: '5' }, running: { type: 'string', default: '6' },
    attaches: { type: 'string', default: '60' }, rtts: { type: 'string', default: '2000' }, seconds: { type: 'string', default: '4' },
  },
});
const SANDBOXES = Number(values.sandboxes);
const NETWORKS = Number(values.networks);
const RUNNING = Math.max(3, Math.min(Number(values.running), SANDBOXES));
const ATTACHES = Number(values.attaches);
const RTTS = Number(values.rtts);
const SECONDS = Number(values.seconds);
const PREFIX = 'rbnw';
const PORT = 7300;
const UPSTREAM = '198.51.100.163';
const root = new URL('../..', import.meta.url).pathname;

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const log = (line) => console.log(line);


let rootfs = process.env.RAMIFY_TEST_ROOTFS;
if (!rootfs) {
  const r = spawnSync(process.execPath, [join(root, 'scripts/prepare-test-rootfs.mjs')], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error('could not prepare the base root filesystem');
  rootfs = r.stdout.trim().split('\n').pop();
}

/** Two raw namespaces joined by one veth, the baseline (10.199.250.1 and .2). */
async function rawPair() {
  const names = { a: `${PREFIX}-rawa`, b: `${PREFIX}-rawb` };
  for (const n of Object.values(names)) await run(['ip', 'netns', 'delete', n]);
  await runChecked(['ip', '-batch', '-'], [
    `netns add ${names.a}`, `netns add ${names.b}`,
    `link add ${PREFIX}va type veth peer name ${PREFIX}vb`,
    `link set ${PREFIX}va netns ${names.a}`, `link set ${PREFIX}vb netns ${names.b}`,
  ].join('\n') + '\n');
  for (const [ns, dev, address] of [[names.a, `${PREFIX}va`, '10.199.250.1'], [names.b, `${PREFIX}vb`, '10.199.250.2']]) {
    await runChecked(['ip', '-n', ns, '-batch', '-'], [`addr add ${address}/30 dev ${dev}`, `link set ${dev} up`, 'link set lo up'].join('\n') + '\n');
  }
  return { ...names, serverAddress: '10.199.250.2', remove: async () => { for (const n of Object.values(names)) await run(['ip', 'netns', 'delete', n]); } };
}

/**
 * Two sandbox-shaped slots with the kernel's TCP stack: NamespaceNetwork slots of prefix `rbnx` behind the
 * egress table (open egress) with the pair of one private network, as the daemon makes them for sandboxes.
 */
async function kernelSlotPair() {
  const prefix = 'rbnx';
  await new NamespaceNetwork({ prefix }).destroyAll();
  await assertSlotRangeFree(prefix);
  const egress = await startHostEgress({ prefix, layout: layoutForPrefix(prefix), upstreams: [{ address: UPSTREAM }] });
  const network = new NamespaceNetwork({ prefix, hostFirewall: egress.enforcer });
  const a = await network.attach('sbx_kernel_a', 1);
  const b = await network.attach('sbx_kernel_b', 2);
  for (const [id, slot] of [['sbx_kernel_a', 1], ['sbx_kernel_b', 2]]) {
    await egress.enforcer.apply(id, slot, OPEN_EGRESS_POLICY);
    await egress.networks.apply(id, slot, [{ networkId: 'net_kernel', network: 'kernel', alias: id.slice(-1) }]);
  }
  return { a, b, remove: async () => { await egress.close(); await network.destroyAll(); } };
}

await new NamespaceNetwork({ prefix: PREFIX }).destroyAll();
await assertSlotRangeFree(PREFIX);
const dataDir = await mkdtemp(join(tmpdir(), 'ramify-bench-networks-'));
const rig = await FakeInternet.start({ prefix: PREFIX, web: [], echo: [], dns: { address: UPSTREAM }, zone: {} });
const daemon = new ChildDaemon({ dataDir, prefix: PREFIX, upstream: UPSTREAM, rootfs });
const call = apiCaller(() => daemon.url, () => daemon.key);
const shell = new SandboxShell(call, () => daemon.url, () => daemon.key);
const ok = (r, what) => {
  if (r.status >= 300) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
};
let raw;
let rawServer;
let slotServer;
let kernelPath;
try {
  const t0 = performance.now();
  await daemon.start();
  for (let i = 0; i < NETWORKS; i++) ok(await call('POST', '/v1/networks', { name: `n${i}` }), 'create network');
  const parent = ok(await call('POST', '/v1/sandboxes', { timeoutMs: 3_600_000 }), 'create').id;
  await shell.install(parent);
  await shell.put(parent, '/opt/probe/netbench.py', NETBENCH_PY);
  await shell.spawn(parent, `python3 /opt/probe/netbench.py serve ${PORT}`);
  await sleep(500);

  // ---- 50 sandboxes: forks of one (its server keeps running in each), most paused ----
  const all = [parent];
  const running = [parent];
  while (all.length < SANDBOXES) {
    const count = Math.min(16, SANDBOXES - all.length);
    const ids = ok(await call('POST', `/v1/sandboxes/${parent}/fork`, { count, networks: false }), 'fork').sandboxes.map((s) => s.id);
    const keep = ids.splice(0, Math.max(0, RUNNING - running.length));
    running.push(...keep);
    for (let i = 0; i < ids.length; i += 4) await Promise.all(ids.slice(i, i + 4).map(async (id) => ok(await call('POST', `/v1/sandboxes/${id}/pause`), 'pause')));
    all.push(...keep, ...ids);
    process.stderr.write(`  ${all.length}/${SANDBOXES} sandboxes\n`);
  }
  const setupAttachMs = [];
  const memberOf = new Map();
  for (const [i, id] of all.entries()) {
    const nets = [i % NETWORKS, (i + 1) % NETWORKS];
    memberOf.set(id, new Set(nets));
    for (const n of nets) {
      const t = performance.now();
      ok(await call('POST', `/v1/sandboxes/${id}/networks`, { network: `n${n}`, alias: `s${i}` }), 'attach');
      setupAttachMs.push(performance.now() - t);
    }
  }
  const elements = JSON.parse(await runChecked(['nft', '-j', 'list', 'set', 'inet', PREFIX, 'peers'])).nftables.find((o) => o.set)?.set?.elem?.length ?? 0;
  log(`bench/networks: daemon prefix ${PREFIX}; ${all.length} sandboxes (forks of one; ${running.length} running) x ${NETWORKS} networks, each on 2 (${(all.length * 2) / NETWORKS} members per network); peers set ${elements} elements; setup ${seconds(performance.now() - t0)}`);

  // ---- 1. latency and throughput: two sandboxes on one network vs two namespaces on a veth ----
  const [client, server] = running;
  const shared = [...memberOf.get(client)].find((n) => memberOf.get(server).has(n));
  const serverAddress = (await slotOf(dataDir, PREFIX, server)).slotAddress;
  if (shared === undefined) throw new Error('the two running sandboxes share no network');
  const inSandbox = async (args) => JSON.parse((await shell.sh(client, `python3 /opt/probe/netbench.py ${args}`)).trim().split('\n').pop());
  raw = await rawPair();
  const hostPy = spawnSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).stdout.trim();
  rawServer = spawn('nsenter', [`--net=/var/run/netns/${raw.b}`, hostPy, '-c', NETBENCH_PY, 'serve', String(PORT)], { stdio: 'ignore' });
  await sleep(500);
  const inRaw = async (args) => JSON.parse((await runChecked(['nsenter', `--net=/var/run/netns/${raw.a}`, hostPy, '-c', NETBENCH_PY, ...args.split(' ')])).trim().split('\n').pop());
  kernelPath = await kernelSlotPair();
  slotServer = spawn('nsenter', [`--net=${kernelPath.b.netnsPath}`, hostPy, '-c', NETBENCH_PY, 'serve', String(PORT)], { stdio: 'ignore' });
  await sleep(500);
  const inSlot = async (args) => JSON.parse((await runChecked(['nsenter', `--net=${kernelPath.a.netnsPath}`, hostPy, '-c', NETBENCH_PY, ...args.split(' ')])).trim().split('\n').pop());
  const sbxRtt = [];
  const rawRtt = [];
  const slotRtt = [];
  const sbxTput = [];
  const rawTput = [];
  const slotTput = [];
  const loopTput = [];
  const sbxPipe = [];
  const rawPipe = [];
  // Interleaved rounds, so drift on a shared machine hits both paths alike.
  for (let round = 0; round < 3; round++) {
    sbxRtt.push(...(await inSandbox(`rtt s${all.indexOf(server)}.n${shared}.internal ${PORT} ${Math.ceil(RTTS / 3)}`)));
    rawRtt.push(...(await inRaw(`rtt ${raw.serverAddress} ${PORT} ${Math.ceil(RTTS / 3)}`)));
    const s = await inSandbox(`tput ${serverAddress} ${PORT} ${SECONDS / 2}`);
    sbxTput.push(s.bytes / s.seconds);
    const r = await inRaw(`tput ${raw.serverAddress} ${PORT} ${SECONDS / 2}`);
    rawTput.push(r.bytes / r.seconds);
    slotRtt.push(...(await inSlot(`rtt ${kernelPath.b.slotAddress} ${PORT} ${Math.ceil(RTTS / 3)}`)));
    const k = await inSlot(`tput ${kernelPath.b.slotAddress} ${PORT} ${SECONDS / 2}`);
    slotTput.push(k.bytes / k.seconds);
    // The sandbox's own ceiling, no link at all: TCP over its loopback (its server runs in it too), and a
    // pipe between two of its processes against the same pipe on the host.
    const l = await inSandbox(`tput 127.0.0.1 ${PORT} ${SECONDS / 2}`);
    loopTput.push(l.bytes / l.seconds);
    const p = await inSandbox(`pipe ${SECONDS / 2}`);
    sbxPipe.push(p.bytes / p.seconds);
    const q = await inRaw(`pipe ${SECONDS / 2}`);
    rawPipe.push(q.bytes / q.seconds);
  }
  const mbps = (xs) => mean(xs) * 8 / 1e6;
  log('TCP between two endpoints (same Python program), median/p99 round trip in µs, throughput in Mbit/s (mean of 3 rounds)');
  log('path\trtt median\trtt p99\tthroughput');
  log(`sandboxes on a network (gVisor)\t${quantile(sbxRtt, 0.5).toFixed(0)}\t${quantile(sbxRtt, 0.99).toFixed(0)}\t${mbps(sbxTput).toFixed(0)}`);
  log(`slot path, kernel TCP (no gVisor)\t${quantile(slotRtt, 0.5).toFixed(0)}\t${quantile(slotRtt, 0.99).toFixed(0)}\t${mbps(slotTput).toFixed(0)}`);
  log(`raw namespaces + veth\t${quantile(rawRtt, 0.5).toFixed(0)}\t${quantile(rawRtt, 0.99).toFixed(0)}\t${mbps(rawTput).toFixed(0)}`);
  log(`the network path's own share (slot path, kernel TCP / veth): throughput ${(mbps(slotTput) / mbps(rawTput)).toFixed(2)}x, median rtt ${(quantile(rawRtt, 0.5) / quantile(slotRtt, 0.5)).toFixed(2)}x`);
  log(`loopback inside one sandbox (gVisor, no link)\t-\t-\t${mbps(loopTput).toFixed(0)}`);
  log(`gVisor's own ceiling (no network): a pipe between two processes in one sandbox ${mbps(sbxPipe).toFixed(0)} Mbit/s, on the host ${mbps(rawPipe).toFixed(0)} Mbit/s: ${(mbps(sbxPipe) / mbps(rawPipe)).toFixed(2)}x`);
  const tputRatio = mbps(sbxTput) / mbps(rawTput);
  log(`latency ratio (median rtt, veth / sandboxes): ${(quantile(rawRtt, 0.5) / quantile(sbxRtt, 0.5)).toFixed(2)}x`);
  log(`throughput ratio (sandboxes / veth): ${tputRatio.toFixed(2)}x (target >= 0.7x: ${verdict(tputRatio >= 0.7)})`);

  // ---- 2. attach to reachable ----
  const slotAddress = new Map();
  for (const id of running) slotAddress.set(id, (await slotOf(dataDir, PREFIX, id)).slotAddress);
  const reach = [];
  const api = [];
  const failures = [];
  for (let k = 0; reach.length < ATTACHES && k < ATTACHES * 4; k++) {
    const target = running[k % running.length];
    const candidates = [...Array(NETWORKS).keys()].filter((n) => !memberOf.get(target).has(n));
    const n = candidates[k % candidates.length];
    // A member of n that shares no network with the target (so it is unreachable until the attach).
    const prober = running.find((id) => id !== target && memberOf.get(id).has(n) && ![...memberOf.get(id)].some((m) => memberOf.get(target).has(m)));
    if (!prober) continue;
    const out = `/tmp/reach-${k}`;
    await shell.spawn(prober, `python3 /opt/probe/netbench.py poll ${slotAddress.get(target)} ${PORT} ${out} 10`);
    await sleep(300);
    if ((await shell.exec(prober, `cat ${out} 2>/dev/null || true`)).stdout.trim()) throw new Error(`attach ${k}: ${target} was reachable from ${prober} before the attach`);
    const sent = Date.now();
    ok(await call('POST', `/v1/sandboxes/${target}/networks`, { network: `n${n}`, alias: `probe-${k}` }), 'live attach');
    api.push(Date.now() - sent);
    let at = null;
    for (const deadline = Date.now() + 8_000; at === null && Date.now() < deadline; await sleep(100)) {
      const text = (await shell.exec(prober, `cat ${out} 2>/dev/null || true`)).stdout.trim();
      if (text) at = Math.round(Number(text) * 1000);
    }
    if (at === null) {
      // Say why, and go on: the figure reports how many attaches never became reachable.
      const pair = await run(['nft', 'get', 'element', 'inet', PREFIX, 'peers', `{ ${slotAddress.get(prober)} . ${slotAddress.get(target)} }`]);
      const direct = await shell.probe(prober, [{ id: 'direct', kind: 'tcp', host: slotAddress.get(target), port: PORT, timeoutS: 2 }]);
      process.stderr.write(`attach ${k}: ${target} not reachable from ${prober} on n${n} within 8 s; pair in the set: ${pair.code === 0}; a direct connect now: ${JSON.stringify(direct.direct)}; poll file: ${JSON.stringify((await shell.exec(prober, `ls -l ${out}; ps aux | grep -c netbench`)).stdout)}\n`);
      failures.push(k);
    } else reach.push(at - sent);
    ok(await call('DELETE', `/v1/sandboxes/${target}/networks/n${n}`), 'live detach');
  }
  log(`attach to reachable, ms (${reach.length} live attaches of running sandboxes, prober connecting every 5 ms; the set holds the other members' pairs)`);
  log('measure\tmedian\tp99\tmax');
  log(`attach call (API)\t${quantile(api, 0.5)}\t${quantile(api, 0.99)}\t${Math.max(...api)}`);
  log(`attach to reachable\t${quantile(reach, 0.5)}\t${quantile(reach, 0.99)}\t${Math.max(...reach)}`);
  log(`setup attaches (${setupAttachMs.length}, running and paused)\t${quantile(setupAttachMs, 0.5).toFixed(0)}\t${quantile(setupAttachMs, 0.99).toFixed(0)}\t${Math.max(...setupAttachMs).toFixed(0)}`);
  if (failures.length > 0) log(`NOT REACHABLE within 8 s after ${failures.length} of ${failures.length + reach.length} attaches (see stderr)`);
  log(`attach to reachable p99: ${quantile(reach, 0.99)} ms (target <= 200 ms: ${verdict(quantile(reach, 0.99) <= 200 && failures.length === 0)})`);
} finally {
  rawServer?.kill('SIGKILL');
  slotServer?.kill('SIGKILL');
  await raw?.remove();
  await kernelPath?.remove();
  const tClean = performance.now();
  await daemon.stop(600_000);
  await rig.teardown();
  await forceCleanup(PREFIX, dataDir);
  const left = await leftovers(PREFIX, dataDir);
  await rm(dataDir, { recursive: true, force: true });
  log(`cleanup: ${seconds(performance.now() - tClean)}${left.length ? `; LEFT BEHIND: ${left.join(', ')}` : ', nothing left behind'}`);
}
