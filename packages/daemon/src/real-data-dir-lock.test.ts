/**
 * One daemon per data directory (data-dir-lock.ts), with REAL daemons (gVisor, namespaces, nftables, ulogd;
 * prefix `rgl`): `ramify serve` run as a child process holds the directory; a second `ramify serve` on it
 * exits at once with DATA_DIR_IN_USE naming the holder's pid, and the holder keeps its egress log reader
 * (the same ulogd, still its child) and its API; after a `kill -9` of the holder, a daemon starts on the
 * directory at once (the lock died with the process). Skipped, with the reason, when not root or without
 * the tools.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { forceCleanup, leftovers } from './real-egress-support.js';
import { apiCaller, realRuntimeSkip, stopRealDaemon } from './real-test-support.js';
import { serve, type RamifyServer } from './serve.js';

const skip = realRuntimeSkip(process.env.RAMIFY_TEST_ROOTFS);
const PREFIX = 'rgl';
const CLI_MAIN = join(dirname(fileURLToPath(import.meta.resolve('@ramify/cli'))), 'main.js');
const ULOGD_PID_FILE = `/run/ramify/egress-${PREFIX}/ulogd.pid`;

let dataDir = '';
let holder: ChildProcess | undefined;
let server: RamifyServer | undefined;

/** `ramify serve` on `dataDir` under this test's prefix, no ingress, SSH or pool (what a user runs, minus the listeners). */
function serveArgs(): string[] {
  return [CLI_MAIN, 'serve', '--data-dir', dataDir, '--port', '0', '--network-prefix', PREFIX, '--ingress-listen', 'off', '--ssh-listen', 'off', '--warm-pool', 'off', '--log-level', 'warn'];
}

/** Start `ramify serve` as a child; resolves with it and its URL once it says it serves. */
async function startHolder(): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, serveArgs(), { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr?.on('data', (c: Buffer) => {
      err += c.toString('utf8');
      const serving = /ramify: serving (http:\/\/\S+)/.exec(err);
      if (serving) resolve(serving[1] as string);
    });
    child.once('exit', (code) => reject(new Error(`ramify serve exited (${code}) before serving: ${err}`)));
  });
  return { child, url };
}

/** The pid of the ulogd reading this prefix's egress log, and its parent's pid. */
async function ulogd(): Promise<{ pid: number; ppid: number }> {
  const pid = Number((await readFile(ULOGD_PID_FILE, 'utf8')).trim());
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Field 4 of /proc/PID/stat, after the parenthesised command name.
  const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  return { pid, ppid };
}

describe('one daemon per data directory (real daemons, gVisor)', { skip, timeout: 180_000 }, () => {
  after(async () => {
    holder?.kill('SIGKILL');
    if (server) await stopRealDaemon(server, apiCaller(() => server?.url, () => '')).catch(() => undefined);
    if (dataDir) {
      await forceCleanup(PREFIX, dataDir);
      assert.deepEqual(await leftovers(PREFIX, dataDir), [], 'nothing of the test is left on the host');
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  test('a second `ramify serve` on the directory exits at once naming the holder; after kill -9 of the holder the next one starts', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-rgl-e2e-'));
    const started = await startHolder();
    holder = started.child;
    const holderUlogd = await ulogd();
    assert.equal(holderUlogd.ppid, holder.pid, "the holder's ulogd reads its egress log");

    // Bounded: without the lock the second daemon would come up and serve (then it is killed here).
    const second = spawn(process.execPath, serveArgs(), { stdio: ['ignore', 'ignore', 'pipe'] });
    let secondErr = '';
    second.stderr?.on('data', (c: Buffer) => (secondErr += c.toString('utf8')));
    const exit = await new Promise<number | null | 'still running'>((resolve) => {
      const timer = setTimeout(() => resolve('still running'), 30_000);
      second.once('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    if (exit === 'still running') second.kill('SIGKILL');
    assert.equal(exit, 1, `the second daemon exits with 1 at once: ${secondErr}`);
    assert.match(secondErr, /DATA_DIR_IN_USE/);
    assert.match(secondErr, new RegExp(`pid ${holder.pid}\\b`), 'it names the pid holding the directory');
    assert.match(secondErr, /--data-dir/, 'and how to run a second daemon');
    assert.doesNotMatch(secondErr, /ramify: serving/);
    assert.deepEqual(await ulogd(), holderUlogd, "the holder keeps its ulogd (and its NFLOG group)");
    assert.equal((await fetch(`${started.url}/v1/health`)).status, 200, 'the holder still answers');

    // kill -9: the kernel drops the lock with the process; the next daemon (in-process here) starts at once.
    const gone = new Promise((resolve) => holder?.once('exit', resolve));
    holder.kill('SIGKILL');
    await gone;
    holder = undefined;
    server = await serve({ dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX } });
    assert.equal((await fetch(`${server.url}/v1/health`)).status, 200);
    const key = (await readFile(join(dataDir, 'api-key'), 'utf8')).trim();
    const listed = await apiCaller(() => server?.url, () => key)('GET', '/v1/sandboxes');
    assert.equal(listed.status, 200, 'the same data directory, the same key');
    await stopRealDaemon(server, apiCaller(() => server?.url, () => key));
    server = undefined;
  });
});
