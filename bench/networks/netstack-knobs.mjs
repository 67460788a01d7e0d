#!/usr/bin/env node
// bench/networks/netstack-knobs: does any network setting lift gVisor's TCP throughput? (issue 12's
// throughput target, >= 0.7x a veth, is MISSED; docs/design/NETWORKS.md records the answer.)
// Two raw network namespaces joined by one veth of a given MTU (prefix `rbnk`, made here); in each a bare
// runsc sandbox (the base rootfs, started as the runtime starts them: the netns, the /proc/sys/net/core
// shim, --network=sandbox) runs bench/networks' program: the server in one, a throughput client in the
// other (one connection, 64 KiB writes). Every variant changes one thing, the veth's MTU (runsc takes the
// interface's MTU from the link) or runsc's network flags, and is measured in interleaved rounds against the
// same program with the kernel's TCP stack on the same veth. Prints Mbit/s (mean of the rounds) and the
// ratio to the kernel. Runs as root under the bench lock; removes everything it made.
//   node bench/networks/netstack-knobs.mjs [--rounds 2] [--seconds 3]
import { spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { run, runChecked } from '@ramify/network';
import { NETBENCH_PY } from './netbench-py.mjs';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '2' }, seconds: { type: 'string', default: '3' } } });
const ROUNDS = Number(values.rounds);
const SECONDS = Number(values.seconds);
const PREFIX = 'rbnk';
const PORT = 7300;
const [A, B] = ['10.199.252.1', '10.199.252.2'];
const root = new URL('../..', import.meta.url).pathname;
const log = (line) => console.log(line);

/** The variants: [label, veth MTU, runsc flags]. runsc's defaults: -gso (host GSO), -software-gso, -rx-checksum-offload on. */
const VARIANTS = [
  ['runsc defaults, MTU 1500 (what sandboxes get)', 1500, []],
  ['MTU 9000', 9000, []],
  ['MTU 65520', 65520, []],
  ['MTU 65520, host GSO off (-gso=false)', 65520, ['-gso=false']],
  ['MTU 65520, no GSO at all', 65520, ['-gso=false', '-software-gso=false']],
  ['-gvisor-gro', 1500, ['-gvisor-gro']],
  ['-tx-checksum-offload', 1500, ['-tx-checksum-offload']],
  ['-gvisor-gro -tx-checksum-offload, MTU 65520', 65520, ['-gvisor-gro', '-tx-checksum-offload']],
  ['-num-network-channels=2', 1500, ['-num-network-channels=2']],
  ['-EXPERIMENTAL-xdp=ns (AF_XDP on the veth)', 1500, ['-EXPERIMENTAL-xdp=ns']],
  ['platform systrap (ptrace is the default here)', 1500, ['--platform=systrap']],
];

let rootfs = process.env.RAMIFY_TEST_ROOTFS;
if (!rootfs) {
  const r = spawnSync(process.execPath, [join(root, 'scripts/prepare-test-rootfs.mjs')], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error('could not prepare the base root filesystem');
  rootfs = r.stdout.trim().split('\n').pop();
}
const hostPy = spawnSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).stdout.trim();
const work = await mkdtemp(join(tmpdir(), 'ramify-bench-knobs-'));
const stateDir = join(work, 'state');
const emptyDir = join(work, 'empty');
await mkdir(stateDir);
await mkdir(emptyDir);
const ns = { a: `${PREFIX}-a`, b: `${PREFIX}-b` };
const dev = { a: `${PREFIX}va`, b: `${PREFIX}vb` };
/** The runtime's compatibility shim (packages/runtime/gvisor/src/runsc.ts): runsc refuses a netns with /proc/sys/net/core. */
const SHIM = 'mount --bind "$1" /proc/sys/net/core && shift && exec "$@"';

async function removeAll() {
  for (const id of ['srv', 'cli']) await run(['runsc', '--root', stateDir, 'delete', '-force', `${PREFIX}-${id}`]);
  for (const n of Object.values(ns)) await run(['ip', 'netns', 'delete', n]);
}

/** Two namespaces joined by a veth of `mtu`. */
async function vethPair(mtu) {
  await removeAll();
  await runChecked(['ip', '-batch', '-'], [
    `netns add ${ns.a}`, `netns add ${ns.b}`,
    `link add ${dev.a} mtu ${mtu} type veth peer name ${dev.b} mtu ${mtu}`,
    `link set ${dev.a} netns ${ns.a}`, `link set ${dev.b} netns ${ns.b}`,
  ].join('\n') + '\n');
  await readdress('a');
  await readdress('b');
}

/** (Re)put the address on one side: runsc takes it off the interface when it takes the interface over. */
async function readdress(side) {
  const address = side === 'a' ? A : B;
  await runChecked(['ip', '-n', ns[side], '-batch', '-'], [`addr replace ${address}/30 dev ${dev[side]}`, `link set ${dev[side]} up`, 'link set lo up'].join('\n') + '\n');
}

async function bundle(name, args) {
  const dir = join(work, name);
  await mkdir(dir, { recursive: true });
  const caps = ['CAP_NET_RAW', 'CAP_NET_BIND_SERVICE'];
  await writeFile(join(dir, 'config.json'), JSON.stringify({
    ociVersion: '1.0.0',
    process: { user: { uid: 0, gid: 0 }, args, env: ['PATH=/usr/bin:/bin'], cwd: '/', capabilities: { bounding: caps, effective: caps, permitted: caps } },
    root: { path: rootfs, readonly: false },
    hostname: name,
    mounts: [{ destination: '/proc', type: 'proc', source: 'proc' }, { destination: '/dev', type: 'tmpfs', source: 'tmpfs' }],
    linux: { namespaces: [{ type: 'pid' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }, { type: 'network', path: '/proc/self/ns/net' }] },
  }));
  return dir;
}

/** argv of `runsc run` of `name` inside `side`'s namespace, as the runtime starts sandboxes. */
function runscRun(side, name, flags, detach) {
  const platform = flags.some((f) => f.startsWith('--platform=')) ? [] : ['--platform=ptrace'];
  return ['nsenter', `--net=/var/run/netns/${ns[side]}`, 'unshare', '-m', '--propagation', 'private', 'sh', '-c', SHIM, 'shim', emptyDir,
    'runsc', '--root', stateDir, ...platform, '--network=sandbox', '--overlay2=root:memory', ...flags,
    'run', ...(detach ? ['-detach'] : []), '-bundle', join(work, name), `${PREFIX}-${name}`];
}

const lastJson = (text) => JSON.parse(text.trim().split('\n').pop());
const mbps = (xs) => (xs.reduce((a, b) => a + b, 0) / xs.length) * 8 / 1e6;

/** One round of one variant: gVisor to gVisor, then kernel to kernel on the same veth; bytes per second each. */
async function round(mtu, flags) {
  await vethPair(mtu);
  const kernelServer = spawn('nsenter', [`--net=/var/run/netns/${ns.b}`, hostPy, '-c', NETBENCH_PY, 'serve', String(PORT + 1)], { stdio: 'ignore' });
  let kernel;
  try {
    await sleep(1000);
    kernel = lastJson(await runChecked(['nsenter', `--net=/var/run/netns/${ns.a}`, hostPy, '-c', NETBENCH_PY, 'tput', B, String(PORT + 1), String(SECONDS)]));
  } finally {
    kernelServer.kill('SIGKILL');
  }
  await bundle('srv', ['python3', '-c', NETBENCH_PY, 'serve', String(PORT)]);
  await bundle('cli', ['python3', '-c', NETBENCH_PY, 'tput', B, String(PORT), String(SECONDS)]);
  // `run -detach` keeps inherited pipes open: its output goes nowhere.
  const argv = runscRun('b', 'srv', flags, true);
  const code = await new Promise((resolve) => spawn(argv[0], argv.slice(1), { stdio: 'ignore' }).on('close', resolve));
  if (code !== 0) throw new Error(`runsc run -detach of the server failed (exit ${code}) with ${flags.join(' ') || 'no flags'}`);
  await sleep(1000);
  // A variant that breaks the path would hang the client: 30 s more than the transfer, then it failed.
  const gvisor = lastJson(await runChecked(['timeout', String(SECONDS + 30), ...runscRun('a', 'cli', flags, false)]));
  await removeAll();
  return { gvisor: gvisor.bytes / gvisor.seconds, kernel: kernel.bytes / kernel.seconds };
}

try {
  log(`bench/networks/netstack-knobs: two bare runsc sandboxes on a veth vs the kernel's TCP on the same veth; ${ROUNDS} rounds of ${SECONDS} s; Mbit/s`);
  log('variant\tgVisor\tkernel\tratio');
  for (const [label, mtu, flags] of VARIANTS) {
    const g = [];
    const k = [];
    try {
      for (let i = 0; i < ROUNDS; i++) {
        const r = await round(mtu, flags);
        g.push(r.gvisor);
        k.push(r.kernel);
      }
    } catch (e) {
      await removeAll();
      log(`${label}\tFAILED: ${String(e.message).split('\n')[0]}`);
      continue;
    }
    log(`${label}\t${mbps(g).toFixed(0)}\t${mbps(k).toFixed(0)}\t${(mbps(g) / mbps(k)).toFixed(2)}x`);
  }
} finally {
  await removeAll();
  await rm(work, { recursive: true, force: true });
}
