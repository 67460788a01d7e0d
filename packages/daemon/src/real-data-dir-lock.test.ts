/**
 * One daemon per data directory (data-dir-lock.ts), with REAL daemons (gVisor, namespaces, nftables, ulogd;
 * prefix `rgl`): `ramify serve` run as a child process holds the directory; a second `ramify serve` on it
 * exits at once with DATA_DIR_IN_USE naming the holder's pid, and the holder keeps its egress log reader
 * (the same ulogd, still its child) and its API; after a `kill -9` of the holder, a daemon starts on the
 * directory at once (the lock died with the process). Skipped, with the reason, when not root or without
 * the tools. `ramify serve --detach` with a real daemon: a second `--detach` names the daemon that answers
 * (pid, data directory, program) or holds the directory (DATA_DIR_IN_USE), also one of another data
 * directory on the port; its serve.log says `ramify serving`, then `ramify stopped` with the signal.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { forceCleanup, leftovers } from './real-egress-support.js';
import { apiCaller, realRuntimeSkip, stopRealDaemon, until } from './real-test-support.js';
import { serve, type RamifyServer } from './serve.js';
import { freePort } from './testing/daemon-process.js';

const skip = realRuntimeSkip(process.env.RAMIFY_TEST_ROOTFS);
const PREFIX = 'rgl';
const CLI_MAIN = join(dirname(fileURLToPath(import.meta.resolve('@ramify/cli'))), 'main.js');
const ULOGD_PID_FILE = `/run/ramify/egress-${PREFIX}/ulogd.pid`;

let dataDir = '';
let holder: ChildProcess | undefined;
let server: RamifyServer | undefined;
/** The `--detach` test's data directories and its daemon's pid (not this process's child: the CLI detached it). */
let detachDir = '';
let otherDir = '';
let detachedPid: number | undefined;

/** `ramify serve` on `dataDir` under this test's prefix, no ingress, SSH or pool (what a user runs, minus the listeners). */
function serveArgs(): string[] {
  return [CLI_MAIN, 'serve', '--data-dir', dataDir, '--port', '0', '--network-prefix', PREFIX, '--ingress-listen', 'off', '--ssh-listen', 'off', '--warm-pool', 'off', '--log-level', 'warn'];
}

/** Run `ramify serve --detach` on `dir` and `port` until the CLI returns (at most 180 s, as the CLI waits); its exit code and stderr. */
async function detach(dir: string, port: number): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [CLI_MAIN, 'serve', '--detach', '--data-dir', dir, '--port', String(port), '--network-prefix', PREFIX, '--ingress-listen', 'off', '--ssh-listen', 'off', '--warm-pool', 'off'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), 200_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearTimeout(timer);
  return { code, stderr };
}

/** Whether process `pid` is alive. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The JSON lines of a daemon's output (the CLI's `ramify: ...` notes and the API key line are skipped). */
function jsonLines(text: string): Array<Record<string, unknown>> {
  return text.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
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
    if (detachedPid !== undefined && alive(detachedPid)) {
      process.kill(detachedPid, 'SIGKILL');
      await until(() => !alive(detachedPid as number), 'the detached daemon is gone').catch(() => undefined);
    }
    for (const dir of [dataDir, detachDir].filter(Boolean)) {
      await forceCleanup(PREFIX, dir);
      assert.deepEqual(await leftovers(PREFIX, dir), [], 'nothing of the test is left on the host');
      await rm(dir, { recursive: true, force: true });
    }
    if (otherDir) await rm(otherDir, { recursive: true, force: true });
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
    assert.ok(secondErr.includes(`the data directory '${dataDir}' is in use`), 'and the directory');
    assert.ok(secondErr.includes(`API ${started.url}, program ${realpathSync(CLI_MAIN)}, started `), `and the holder's API and program: ${secondErr}`);
    assert.ok(secondErr.includes(`kill ${holder.pid} (SIGTERM`), 'and how to stop it');
    assert.match(secondErr, /--data-dir/, 'and how to run a second daemon');
    // Said once: on a pipe only the CLI's line (the JSON line goes to a log file: serve-cli-start-errors.test.ts).
    assert.equal(secondErr.match(/DATA_DIR_IN_USE/g)?.length, 1, `said once: ${secondErr}`);
    assert.deepEqual(jsonLines(secondErr).filter((l) => l.msg === 'ramify failed to start'), [], secondErr);
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

  test('`ramify serve --detach` names the daemon it finds; its serve.log says when it stopped and why', async () => {
    detachDir = await mkdtemp(join(tmpdir(), 'ramify-rgl-detach-'));
    otherDir = await mkdtemp(join(tmpdir(), 'ramify-rgl-other-'));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const first = await detach(detachDir, port);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, new RegExp(`^ramify: serving ${url} in the background`, 'm'));
    const record = JSON.parse(await readFile(join(detachDir, 'daemon.lock'), 'utf8')) as { pid: number; url: string; program: string; startedAt: string };
    detachedPid = record.pid;
    assert.deepEqual({ url: record.url, program: record.program }, { url, program: realpathSync(CLI_MAIN) }, 'the lock file names its API and program');
    const named = `pid ${record.pid}, API ${url}, program ${realpathSync(CLI_MAIN)}, started ${record.startedAt}`;
    const log = join(detachDir, 'serve.log');
    assert.deepEqual(jsonLines(await readFile(log, 'utf8')).filter((l) => String(l.msg).startsWith('ramify ')).map((l) => [l.msg, l.url]), [['ramify serving', url]]);

    // Again on the same directory and port: nothing started, and it says which daemon answers.
    const again = await detach(detachDir, port);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stderr.split('\n')[0], `ramify: a daemon already answers at ${url}: ${named}, data directory ${detachDir}; nothing started. `
      + `To stop it: kill ${record.pid} (SIGTERM: it stops cleanly; its sandboxes keep running)`);

    // Another port, the same directory: refused as a foreground `ramify serve` is, naming the holder; nothing spawned.
    const otherPort = await detach(detachDir, await freePort());
    assert.equal(otherPort.code, 1, otherPort.stderr);
    assert.ok(otherPort.stderr.startsWith(`ramify: DATA_DIR_IN_USE: the data directory '${detachDir}' is in use by another ramify daemon (${named}). `), otherPort.stderr);

    // The same port, another directory (a second clone's): it is not that directory's daemon, and it names the one it is.
    const otherDirectory = await detach(otherDir, port);
    assert.equal(otherDirectory.code, 0, otherDirectory.stderr);
    assert.equal(otherDirectory.stderr.split('\n')[0], `ramify: a daemon already answers at ${url}, but not this data directory's: no daemon holds data directory ${otherDir}; nothing started. `
      + `The one at ${url}: ${named}, data directory ${detachDir}; to stop it: kill ${record.pid} (SIGTERM: it stops cleanly; its sandboxes keep running). `
      + 'For a daemon of your own, give it its own --port (and --data-dir, --network-prefix, --ingress-listen, --ssh-listen)');

    // The stop the messages name: SIGTERM. The log's last line says it stopped, and why.
    process.kill(record.pid, 'SIGTERM');
    await until(() => !alive(record.pid), 'the detached daemon has exited', 60_000);
    detachedPid = undefined;
    const last = jsonLines(await readFile(log, 'utf8')).at(-1);
    assert.deepEqual({ msg: last?.msg, reason: last?.reason, url: last?.url, dataDir: last?.dataDir }, { msg: 'ramify stopped', reason: 'SIGTERM', url, dataDir: detachDir });

    // --port 0: the daemon picks the port, and the CLI waits for the address it recorded (not for port 0).
    const anyPort = await detach(detachDir, 0);
    assert.equal(anyPort.code, 0, anyPort.stderr);
    const picked = JSON.parse(await readFile(join(detachDir, 'daemon.lock'), 'utf8')) as { pid: number; url: string };
    detachedPid = picked.pid;
    assert.match(picked.url, /^http:\/\/127\.0\.0\.1:[1-9][0-9]*$/);
    assert.match(anyPort.stderr, new RegExp(`^ramify: serving ${picked.url} in the background`, 'm'));
    process.kill(picked.pid, 'SIGTERM');
    await until(() => !alive(picked.pid), 'the detached daemon on a picked port has exited', 60_000);
    detachedPid = undefined;
  });
});
