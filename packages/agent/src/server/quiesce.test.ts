/**
 * The checkpoint freezer, on real child processes of this test. The /proc it reads is a synthetic
 * directory naming only those children (with this process as the "agent", a child of pid 1), so the
 * freezer can never signal anything else on the host; the children's real state is read from /proc.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { sleepers } from '../test-support/sleepers.js';
import { BridgePids } from './bridge-pids.js';
import { listProcStats } from './proc-tree.js';
import { byDepth, ProcessFreezer, quiesceNetwork } from './quiesce.js';

const { dir, spawn: spawnSleeper } = sleepers('quiesce');
const sleeper = (): number => spawnSleeper().pid as number;

/** The real state letter of `pid` (R, S, T, ...). */
function realState(pid: number): string {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' ')[0] as string;
}

/**
 * `pid`'s state once it is (`stopped`) or is no longer (`running`) `T`, or as it is after 5 s: a signal is
 * acted on asynchronously (a child just spawned may still be exec'ing when SIGSTOP is sent).
 */
async function settledState(pid: number, want: 'stopped' | 'running'): Promise<string> {
  let state = realState(pid);
  for (let i = 0; i < 500 && (state === 'T') !== (want === 'stopped'); i++) {
    await new Promise((r) => setTimeout(r, 10));
    state = realState(pid);
  }
  return state;
}

/** Write a synthetic /proc: `rows` as [pid, ppid, state, cmdline]; plus empty net/tcp files. */
function fakeProc(name: string, rows: Array<[number, number, string, string]>, tcp = ''): string {
  const proc = join(dir, name);
  for (const [pid, ppid, state, cmdline] of rows) {
    mkdirSync(join(proc, String(pid)), { recursive: true });
    writeFileSync(join(proc, String(pid), 'stat'), `${pid} (x) ${state} ${ppid} ${pid} ${pid} 0 -1`);
    writeFileSync(join(proc, String(pid), 'cmdline'), cmdline.replaceAll(' ', '\0'));
  }
  mkdirSync(join(proc, 'net'), { recursive: true });
  writeFileSync(join(proc, 'net', 'tcp'), `  sl  local_address rem_address   st\n${tcp}`);
  writeFileSync(join(proc, 'net', 'tcp6'), '');
  return proc;
}

const AGENT = process.pid;

test('freeze stops every process but the agent, its ancestors and the bridge; thaw continues only those', async () => {
  const [worker, bridge, userStopped] = [sleeper(), sleeper(), sleeper()];
  process.kill(userStopped, 'SIGSTOP');
  const proc = fakeProc('a', [
    [1, 0, 'S', '/usr/bin/tini -s --'],
    [AGENT, 1, 'S', 'node /opt/ramify/agent.mjs serve --socket /run/ramify/agent.sock'],
    [worker, AGENT, 'S', 'sleep 300'],
    [bridge, 0, 'S', 'socat STDIO UNIX-CONNECT:/run/ramify/agent.sock'],
    [userStopped, AGENT, 'T', 'sleep 300'],
  ]);
  const freezer = new ProcessFreezer({ selfPid: AGENT, procDir: proc, spareCommandLinesWith: ['/run/ramify/agent.sock'] });
  assert.equal(freezer.freeze(), 1);
  assert.deepEqual(freezer.stopped, [worker]);
  assert.equal(await settledState(worker, 'stopped'), 'T');
  assert.notEqual(realState(bridge), 'T', 'the bridge keeps running');
  assert.equal(freezer.thaw(), 1);
  assert.notEqual(await settledState(worker, 'running'), 'T');
  assert.equal(realState(userStopped), 'T', 'a process stopped by someone else stays stopped');
  assert.equal(freezer.thaw(), 0, 'a second thaw is a no-op');
});

test('a bridge that wrote its pid is spared, and its /proc/PID is never read', async () => {
  const [worker, bridge] = [sleeper(), sleeper()];
  // The bridge's command line names no socket: only its pid file can spare it.
  const proc = fakeProc('pidfile', [
    [1, 0, 'S', 'tini'],
    [AGENT, 1, 'S', 'agent'],
    [worker, AGENT, 'S', 'sleep 300'],
    [bridge, 0, 'S', 'sleep 300'],
  ]);
  const bridges = new BridgePids(join(dir, 'pidfile-bridges'));
  writeFileSync(join(bridges.dir, String(bridge)), `${bridge}\n`);
  assert.deepEqual(listProcStats(proc, bridges.list()).map((s) => s.pid).sort(), [1, AGENT, worker].sort(), 'skipped before its stat is read');
  const freezer = new ProcessFreezer({ selfPid: AGENT, procDir: proc, spareCommandLinesWith: ['/run/ramify/agent.sock'], bridges });
  assert.equal(freezer.freeze(), 1);
  assert.deepEqual(freezer.stopped, [worker]);
  assert.notEqual(realState(bridge), 'T', 'the bridge keeps running');
  freezer.thaw();
  assert.notEqual(await settledState(worker, 'running'), 'T');
});

test('BridgePids.prune drops the files of exited bridges and keeps the running ones', () => {
  const bridges = new BridgePids(join(dir, 'prune-bridges'));
  const live = sleeper();
  const exited = spawnSync('sh', ['-c', 'echo $$']).stdout.toString().trim();
  writeFileSync(join(bridges.dir, String(live)), '');
  writeFileSync(join(bridges.dir, exited), '');
  writeFileSync(join(bridges.dir, 'not-a-pid'), '');
  assert.deepEqual([...bridges.list()].sort(), [live, Number(exited)].sort());
  assert.equal(bridges.prune(), 1);
  assert.deepEqual([...bridges.list()], [live]);
  assert.equal(existsSync(join(bridges.dir, exited)), false);
});

test('quiesce: an open endpoint leaves everything running; a quiet network leaves the rest frozen', async () => {
  const worker = sleeper();
  const rows: Array<[number, number, string, string]> = [[1, 0, 'S', 'tini'], [AGENT, 1, 'S', 'agent'], [worker, AGENT, 'S', 'sleep 300']];
  const busy = fakeProc('busy', rows, '   0: 0200FE0A:A40B 0A0200C0:0050 02 00000000:00000000 00:00000000 00000000     0        0 1\n');
  const freezer = new ProcessFreezer({ selfPid: AGENT, procDir: busy });
  const blocked = await quiesceNetwork(freezer, join(busy, 'net'));
  assert.deepEqual(blocked, { frozen: false, endpoints: ['10.254.0.2:41995 -> 192.0.2.10:80 SYN_SENT'] });
  assert.notEqual(realState(worker), 'T');
  const quiet = fakeProc('quiet', rows);
  const quietFreezer = new ProcessFreezer({ selfPid: AGENT, procDir: quiet });
  assert.deepEqual(await quiesceNetwork(quietFreezer, join(quiet, 'net')), { frozen: true, endpoints: [] });
  assert.equal(await settledState(worker, 'stopped'), 'T');
  quietFreezer.thaw();
  assert.notEqual(await settledState(worker, 'running'), 'T');
});

test('an agent that is not the sandbox init or its child refuses to freeze (a host is never stopped)', () => {
  const proc = fakeProc('host', [[1, 0, 'S', 'systemd'], [4242, 1, 'S', 'bash'], [AGENT, 4242, 'S', 'node agent']]);
  assert.throws(() => new ProcessFreezer({ selfPid: AGENT, procDir: proc }).freeze(), (err: Error & { code?: string }) => err.code === 'BAD_REQUEST' && /not a sandbox's init/.test(err.message));
});

test('byDepth puts every parent before its children', () => {
  const stat = (pid: number, ppid: number) => ({ pid, ppid, pgrp: pid, session: pid, state: 'S' });
  assert.deepEqual(byDepth([stat(30, 20), stat(20, 1), stat(1, 0), stat(25, 1), stat(40, 30)]).map((s) => s.pid), [1, 20, 25, 30, 40]);
});
