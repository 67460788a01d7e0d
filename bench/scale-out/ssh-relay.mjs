#!/usr/bin/env node
// bench/scale-out/ssh-relay.mjs: SSH through the API role's relay (issue 16) against the same sandbox's
// host gateway reached directly (the raw mechanism: one SSH hop instead of two), in one run. A real
// cluster on this machine (packages/daemon/src/testing/cluster.ts, prefix `rsr`): Postgres and s3rver on a
// bridge, one `ramify serve --role host` in its own network namespace (SSH on 10.199.0.11:2222) and one
// `--role api` process in the root namespace (SSH relay on a loopback port), the OpenSSH client here.
//   flock /tmp/ramify-real-tests.lock node bench/scale-out/ssh-relay.mjs [--rounds 10] [--mb 50] [--transfers 3]
// Rows (rounds alternate which path goes first, so outside load falls on both alike; medians):
//  connect+exec: `ssh sbx@... true`, the whole client run (handshakes, authentication, a command), the
//                relay's extra handshake, token mint and revoke included [relay <= 2x direct]
//  scp up/down:  --mb of random bytes with `scp` (SFTP), sha256 checked [relay >= 0.5x direct MB/s]
// As root; needs the packages built, Postgres' binaries (postgresql-15), ssh, scp, ssh-keygen.
import { createHash, randomFillSync } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { run as runChild } from '../../packages/daemon/dist/real-ssh-support.js';
import { startCluster } from '../../packages/daemon/dist/testing/cluster.js';
import { benchRootfs } from '../support/in-process-daemon.mjs';
import { timeMs, upperMedian, verdict } from '../support/stats.mjs';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '10' }, mb: { type: 'string', default: '50' }, transfers: { type: 'string', default: '3' } } });
const ROUNDS = Number(values.rounds);
const MB = Number(values.mb);
const TRANSFERS = Number(values.transfers);
const sha256 = (b) => createHash('sha256').update(b).digest('hex');

/** Run a child to its end (asynchronously); rejects with its stderr unless it exits 0. */
async function run(command, args) {
  const r = await runChild(command, args);
  if (r.code !== 0) throw new Error(`${command} exited ${r.code}: ${r.stderr.trim()}`);
}

const cluster = await startCluster({ prefix: 'rsr', hosts: 1, mode: 'roles', rootfs: benchRootfs() });
const work = await mkdtemp(join(tmpdir(), 'ramify-bench-rsr-'));
try {
  const call = cluster.callAt(() => cluster.entryUrl());
  const must = async (method, path, body) => {
    const r = await call(method, path, body);
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json;
  };
  const key = join(work, 'id');
  await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', key]);
  await must('POST', '/v1/ssh-keys', { publicKey: await readFile(`${key}.pub`, 'utf8') });
  const sandbox = await must('POST', '/v1/sandboxes', { template: cluster.templateId, timeoutMs: 3_600_000 });
  const host = cluster.hosts[0];
  const paths = { direct: { address: host.address, port: 2222 }, relay: { address: '127.0.0.1', port: cluster.apiSshPorts[0] } };
  const opts = ['-F', '/dev/null', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'BatchMode=yes', '-o', 'LogLevel=ERROR', '-o', 'IdentitiesOnly=yes', '-o', 'IdentityAgent=none', '-i', key];
  const ssh = (path, cmd) => run('ssh', [...opts, '-p', String(paths[path].port), `${sandbox.id}@${paths[path].address}`, cmd]);
  const scp = (path, from, to) => run('scp', [...opts, '-q', '-P', String(paths[path].port), ...[from, to].map((p) => p.replace('REMOTE:', `${sandbox.id}@${paths[path].address}:`))]);
  const order = (i) => (i % 2 === 0 ? ['direct', 'relay'] : ['relay', 'direct']);

  await ssh('direct', 'true');
  await ssh('relay', 'true');
  const exec = { direct: [], relay: [] };
  for (let i = 0; i < ROUNDS; i++) for (const path of order(i)) exec[path].push(await timeMs(() => ssh(path, 'true')));

  const file = join(work, 'blob');
  const bytes = Buffer.alloc(MB * 1e6);
  randomFillSync(bytes);
  await writeFile(file, bytes);
  const digest = sha256(bytes);
  const up = { direct: [], relay: [] };
  const down = { direct: [], relay: [] };
  for (let i = 0; i < TRANSFERS; i++) {
    for (const path of order(i)) {
      up[path].push(MB / ((await timeMs(() => scp(path, file, 'REMOTE:/root/blob'))) / 1000));
      const back = join(work, `back-${path}`);
      down[path].push(MB / ((await timeMs(() => scp(path, 'REMOTE:/root/blob', back))) / 1000));
      if (sha256(await readFile(back)) !== digest) throw new Error(`the ${path} download differs from the upload`);
    }
  }

  const e = { direct: upperMedian(exec.direct), relay: upperMedian(exec.relay) };
  console.log(`ssh relay bench (load average ${loadavg()[0].toFixed(1)}; ${ROUNDS} rounds, ${TRANSFERS} transfers of ${MB} MB)`);
  console.log(`connect+exec: relay ${e.relay.toFixed(0)} ms, direct ${e.direct.toFixed(0)} ms, ${(e.relay / e.direct).toFixed(2)}x [<= 2x: ${verdict(e.relay <= 2 * e.direct)}]`);
  for (const [name, xs] of [['scp up', up], ['scp down', down]]) {
    const r = upperMedian(xs.relay);
    const d = upperMedian(xs.direct);
    console.log(`${name}: relay ${r.toFixed(1)} MB/s, direct ${d.toFixed(1)} MB/s, ${(r / d).toFixed(2)}x [>= 0.5x: ${verdict(r >= 0.5 * d)}]`);
  }
} finally {
  await rm(work, { recursive: true, force: true });
  await cluster.close();
  const left = cluster.leftovers();
  if (left.length > 0) console.log(`leftovers: ${left.join(', ')}`);
}
