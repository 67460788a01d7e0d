#!/usr/bin/env node
// bench/interactive/ssh.mjs (issue 11, the SSH half; targets in brackets), one gVisor sandbox, one run:
//  echo: keystroke echo round trip through the SSH gateway with the real OpenSSH client [p50 <= 10 ms]:
//        `ssh -tt` running `cat` on a raw terminal in the sandbox; one byte written to ssh's stdin, timed
//        until it comes back on ssh's stdout; one keystroke at a time. Baseline, same sandbox, same run:
//        one byte through `runsc exec <container> cat` (stdio pipes), the runtime without Ramify. The two
//        rows are measured in rounds, alternating which goes first, so outside load falls on both alike.
//  scp:  the same 100 MB file (random bytes) up and down with `scp` (SFTP, OpenSSH's default) against the
//        files API (`curl -T` / `curl -o` on PUT/GET /v1/sandboxes/{id}/files) [scp >= 0.5x the files
//        API, each direction], sha256 checked after every transfer; rounds alternating the order, each
//        judged on the median of its rounds.
// Beside bench/interactive/run.mjs (the PTY echo): `echoSection` and `scpSection` take one context
// (daemon, sandbox, ssh options) and return printed lines; this file runs them with its own daemon
// (bench/support/in-process-daemon.mjs, prefix `rmks`, SSH on a free loopback port), as root, and
// removes its sandboxes, namespaces and tables afterwards. Needs the packages built, the base rootfs (as
// `npm test` builds it, or RAMIFY_TEST_ROOTFS), ssh, scp, ssh-keygen and curl. Under the real-tests lock:
//   flock /tmp/ramify-real-tests.lock node bench/interactive/ssh.mjs [--keystrokes 200] [--rounds 4] [--mb 100] [--transfers 3]
import { spawn } from 'node:child_process';
import { createHash, randomFillSync } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { until } from '../../packages/daemon/dist/real-test-support.js';
import { EchoCounter } from '../support/echo-counter.mjs';
import { startBenchDaemon } from '../support/in-process-daemon.mjs';
import { nearestRank, upperMedian, verdict } from '../support/stats.mjs';

// Not strict: bench/interactive/run.mjs imports the sections with its own options on the command line.
const { values } = parseArgs({ strict: false, options: {
  keystrokes: { type: 'string', default: '200' }, rounds: { type: 'string', default: '4' }, warmup: { type: 'string', default: '20' },
  mb: { type: 'string', default: '100' }, transfers: { type: 'string', default: '3' },
} });
const KEYSTROKES = Number(values.keystrokes);
const ROUNDS = Number(values.rounds);
const WARMUP = Number(values.warmup);
const PREFIX = 'rmks';

/** Run a child to its end (asynchronously: the daemon serving it runs in this process). */
function run(command, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    child.stdout.resume();
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}: ${stderr.trim()}`))));
  });
}

// ---- echo: one byte at a time through a child's stdin, until it is back on its stdout ----

/**
 * A child echoing what it is sent (`args`); ready once `readyMark` came out (then counting echoed bytes).
 * Returns `sample(count)` (round-trip times, ms) and `close()`.
 */
async function echoChild(command, args, readyMark, prime) {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const echoes = new EchoCounter();
  let ready = false;
  let seen = '';
  child.stdout.on('data', (chunk) => {
    if (ready) return echoes.add(chunk.length);
    seen += chunk.toString('latin1');
    if (seen.includes(readyMark)) ready = true;
  });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  const exited = new Promise((resolve) => child.on('close', resolve));
  if (prime) child.stdin.write(prime);
  await until(async () => ready, `${command} is ready (${stderr.trim()})`, 60_000);
  const sample = async (count) => {
    const times = [];
    for (let i = 0; i < count; i++) {
      const before = echoes.received;
      const t = performance.now();
      child.stdin.write(Buffer.from([0x61 + (i % 26)]));
      await echoes.past(before, `keystroke ${i} came back (${stderr.trim()})`);
      times.push(performance.now() - t);
    }
    return times;
  };
  await sample(WARMUP);
  return {
    sample,
    close: async () => {
      child.stdin.end();
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Section `ssh-echo`: keystrokes through `ssh -tt` to `cat` on a raw terminal, against `runsc exec cat`. */
export async function echoSection({ server, dataDir, sandboxId, ssh }) {
  const viaSsh = await echoChild('ssh', [...ssh.options, '-tt', '-p', String(ssh.port), `${sandboxId}@127.0.0.1`, "stty raw -echo && printf 'ECHO-READY' && exec cat"], 'ECHO-READY');
  const containerId = await server.core.runtimes[0].containerOf(sandboxId);
  // runsc exec's cat says nothing until it gets a byte: the first byte is the ready mark.
  const raw = await echoChild('runsc', ['--root', join(dataDir, 'runtime', 'gvisor', 'state'), 'exec', containerId, 'cat'], 'R', 'R');
  const times = { ssh: [], raw: [] };
  try {
    const per = Math.ceil(KEYSTROKES / ROUNDS);
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? ['ssh', 'raw'] : ['raw', 'ssh'];
      for (const which of order) times[which].push(...await (which === 'ssh' ? viaSsh : raw).sample(Math.min(per, KEYSTROKES - times[which].length)));
    }
  } finally {
    await viaSsh.close();
    await raw.close();
  }
  const row = (what, xs) => ({ what, n: xs.length, p50: nearestRank(xs, 0.5), p99: nearestRank(xs, 0.99) });
  const baseline = row('raw: runsc exec cat (stdio pipes)', times.raw);
  const viaGateway = row('SSH: ssh -tt -> cat on a raw terminal', times.ssh);
  return [
    `${viaGateway.what.padEnd(40)} n=${viaGateway.n}  p50 ${viaGateway.p50.toFixed(2)} ms  p99 ${viaGateway.p99.toFixed(2)} ms  (${(viaGateway.p50 / baseline.p50).toFixed(1)}x raw)  target p50 <= 10 ms: ${verdict(viaGateway.p50 <= 10)}`,
    `${baseline.what.padEnd(40)} n=${baseline.n}  p50 ${baseline.p50.toFixed(2)} ms  p99 ${baseline.p99.toFixed(2)} ms`,
  ];
}

// ---- scp against the files API ----

const sha256File = (path) => new Promise((resolve, reject) => {
  const hash = createHash('sha256');
  createReadStream(path).on('data', (c) => hash.update(c)).on('error', reject).on('end', () => resolve(hash.digest('hex')));
});

/** Section `scp`: one file up and down with scp and with the files API, MB/s, ratios, sha256 checked. */
export async function scpSection({ server, key, sandboxId, ssh, work, call }) {
  const bytes = Number(values.mb) * 1_000_000;
  const local = join(work, 'bench.bin');
  const data = Buffer.alloc(bytes);
  randomFillSync(data);
  await writeFile(local, data);
  const want = createHash('sha256').update(data).digest('hex');
  const remote = '/root/bench.bin';
  const fileUrl = `${server.url}/v1/sandboxes/${sandboxId}/files?path=${encodeURIComponent(remote)}`;
  const auth = ['-H', `authorization: Bearer ${key}`];
  const scp = ['scp', ...ssh.options, '-P', String(ssh.port)];
  const target = `${sandboxId}@127.0.0.1:${remote}`;
  const down = join(work, 'down.bin');
  const check = async (where, hash) => {
    if (hash !== want) throw new Error(`${where}: sha256 ${hash} is not the file's ${want}`);
  };
  const remoteHash = async () => (await call('POST', `/v1/sandboxes/${sandboxId}/commands`, { cmd: `sha256sum ${remote}` })).json.stdout.split(' ')[0];
  const ways = {
    'scp up': async () => run(scp[0], [...scp.slice(1), local, target]),
    'scp down': async () => run(scp[0], [...scp.slice(1), target, down]),
    'files API up': async () => run('curl', ['-sSf', '-H', 'Expect:', '-H', 'content-type: application/octet-stream', ...auth, '-T', local, fileUrl, '-o', '/dev/null']),
    'files API down': async () => run('curl', ['-sSf', ...auth, '-o', down, fileUrl]),
  };
  const seconds = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
  for (let r = 0; r < Number(values.transfers); r++) {
    const pairs = r % 2 === 0 ? [['scp up', 'scp down'], ['files API up', 'files API down']] : [['files API up', 'files API down'], ['scp up', 'scp down']];
    for (const [upWay, downWay] of pairs) {
      let t = performance.now();
      await ways[upWay]();
      seconds[upWay].push((performance.now() - t) / 1000);
      await check(upWay, await remoteHash());
      await rm(down, { force: true });
      t = performance.now();
      await ways[downWay]();
      seconds[downWay].push((performance.now() - t) / 1000);
      await check(downWay, await sha256File(down));
    }
  }
  const mbps = (way) => bytes / 1e6 / upperMedian(seconds[way]);
  const lines = [];
  for (const dir of ['up', 'down']) {
    const viaScp = mbps(`scp ${dir}`);
    const viaApi = mbps(`files API ${dir}`);
    lines.push(`${`scp ${dir}`.padEnd(16)} ${viaScp.toFixed(1).padStart(7)} MB/s   files API ${dir} ${viaApi.toFixed(1).padStart(7)} MB/s   scp/API ${(viaScp / viaApi).toFixed(2)}x   target >= 0.5x: ${verdict(viaScp / viaApi >= 0.5)}`);
  }
  return lines;
}

/** SSH options for the bench: a new key in `work`, registered with the daemon (started with `ssh`). */
export async function benchSshAccess({ server, call, work }) {
  const identity = join(work, 'id_bench');
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', identity]);
  const added = await call('POST', '/v1/ssh-keys', { publicKey: await readFile(`${identity}.pub`, 'utf8') });
  if (added.status !== 201) throw new Error(JSON.stringify(added.json));
  return {
    port: server.ssh.port,
    options: ['-F', '/dev/null', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes', '-o', 'LogLevel=ERROR', '-o', 'IdentityAgent=none', '-o', 'IdentitiesOnly=yes', '-i', identity],
  };
}

// ---- run alone ----

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
const { server, key, call, dataDir, stop } = await startBenchDaemon({ prefix: PREFIX, name: 'ssh', options: { ssh: { host: '127.0.0.1', port: 0 } } });
const work = await mkdtemp(join(tmpdir(), 'ramify-bench-ssh-work-'));
try {
  const created = await call('POST', '/v1/sandboxes', { template: 'base', timeoutMs: 3_600_000 });
  if (created.status !== 201) throw new Error(JSON.stringify(created.json));
  const sandboxId = created.json.id;
  const ssh = await benchSshAccess({ server, call, work });
  const runtime = server.core.runtimes[0];
  console.log(`bench/interactive/ssh: ${runtime.name} (${runtime.summary ?? '?'}), one sandbox of the base rootfs, daemon in-process, OpenSSH client, load average ${loadavg()[0].toFixed(1)}`);
  const ctx = { server, key, call, dataDir, sandboxId, ssh, work };
  console.log(`echo: ${KEYSTROKES} keystrokes per row, one at a time, in ${ROUNDS} rounds (alternating which row goes first) after ${WARMUP} warm-up each`);
  for (const line of await echoSection(ctx)) console.log(`  ${line}`);
  console.log(`scp: ${values.mb} MB of random bytes, ${values.transfers} rounds each way (alternating which goes first), median per way, sha256 checked after each transfer`);
  for (const line of await scpSection(ctx)) console.log(`  ${line}`);
} finally {
  await stop();
  await rm(work, { recursive: true, force: true });
}
}
