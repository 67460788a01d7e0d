/**
 * Protocol tests of `ramify sandbox exec --background`, `ps`, `attach` and `kill-process`: the built CLI
 * runs as a child process against the in-test contract fixture (`@ramify/sdk/testing`), whose
 * "processes" are scripts; exit codes, output and errors.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_MAX_OUTPUT_BYTES } from '@ramify/sdk';
import type { CommandScript } from '@ramify/sdk/testing';
import { useCliFixture } from './test-support/cli-fixture.js';

const scripts: Record<string, CommandScript> = {
  'serve-forever': async (ctx) => { ctx.stdout('listening\n'); await ctx.killed; },
  'ticker': async (ctx) => {
    let killed = false;
    void ctx.killed.then(() => (killed = true));
    while (!killed) {
      ctx.stdout('tick\n');
      await ctx.sleep(10);
    }
  },
  'two-lines': async (ctx) => { ctx.stdout('line 1\n'); await ctx.sleep(20); ctx.stderr('warn\n'); ctx.stdout('line 2\n'); return 3; },
};

const cli = useCliFixture('processes', { scripts: (cmd) => scripts[cmd] });
const ramify = cli.ramify;

const newSandbox = cli.newSandbox;

describe('protocol: ramify sandbox exec --background, ps, attach, kill-process', () => {
  test('exec --background prints the pid at once (--json: sandboxId, pid, cmd); the process keeps running', async () => {
    const id = await newSandbox();
    const started = await ramify(['sandbox', 'exec', '--background', id, '--', 'serve-forever']);
    assert.equal(started.code, 0, started.stderr);
    assert.match(started.stdout, /^\d+\n$/);
    assert.equal(started.stderr, '');
    const pid = Number(started.stdout);
    const json = await ramify(['sandbox', 'exec', id, '-b', '--json', '--', 'serve-forever']);
    assert.equal(json.code, 0, json.stderr);
    const body = JSON.parse(json.stdout) as { sandboxId: string; pid: number; cmd: string };
    assert.deepEqual(body, { sandboxId: id, pid: body.pid, cmd: 'serve-forever' });
    assert.notEqual(body.pid, pid);

    const ps = JSON.parse((await ramify(['sandbox', 'ps', id, '--json'])).stdout) as { pid: number; running: boolean; cmd: string }[];
    assert.deepEqual(ps.filter((p) => p.running).map((p) => p.pid).sort(), [pid, body.pid].sort());
    const table = await ramify(['sandbox', 'ps', id]);
    assert.match(table.stdout, /^PID\s+STATUS\s+STARTED\s+OUTPUT\s+COMMAND$/m);
    assert.match(table.stdout, new RegExp(`^${pid}\\s+running\\s.*serve-forever$`, 'm'));

    const noStdin = await ramify(['sandbox', 'exec', '--background', '--stdin', id, '--', 'cat']);
    assert.equal(noStdin.code, 2);
    assert.match(noStdin.stderr, /cannot be used with/);
  });

  test('kill-process kills by pid (its status shows the signal); an unknown pid is PROCESS_NOT_FOUND', async () => {
    const id = await newSandbox();
    const pid = Number((await ramify(['sandbox', 'exec', '-b', id, '--', 'serve-forever'])).stdout);
    const killed = await ramify(['sandbox', 'kill-process', id, String(pid)]);
    assert.equal(killed.code, 0, killed.stderr);
    assert.equal(killed.stdout, `${pid} killed\n`);
    assert.match((await ramify(['sandbox', 'ps', id])).stdout, new RegExp(`^${pid}\\s+killed \\(SIGKILL\\)\\s`, 'm'));
    assert.equal((JSON.parse((await ramify(['sandbox', 'get', id, '--json'])).stdout) as { state: string }).state, 'running');

    const missing = await ramify(['sandbox', 'kill-process', id, '999999']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^ramify: PROCESS_NOT_FOUND: no process 999999 in sandbox /);
    assert.equal((await ramify(['sandbox', 'kill-process', id, 'abc'])).code, 2);
  });

  test('kill-process on a process that already exited says how it ended and exits 0; unknown pids still fail', async () => {
    const id = await newSandbox();
    const exited = (await ramify(['sandbox', 'exec', '-b', id, '--', 'two-lines'])).stdout.trim();
    assert.equal((await ramify(['sandbox', 'attach', id, exited])).code, 3);
    const again = await ramify(['sandbox', 'kill-process', id, exited]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.stdout, `${exited} had already exited (exit code 3)\n`);
    assert.equal(again.stderr, '');

    const killed = (await ramify(['sandbox', 'exec', '-b', id, '--', 'serve-forever'])).stdout.trim();
    assert.equal((await ramify(['sandbox', 'kill-process', id, killed])).code, 0);
    const running = (await ramify(['sandbox', 'exec', '-b', id, '--', 'serve-forever'])).stdout.trim();
    const json = await ramify(['sandbox', 'kill-process', id, running, killed, exited, '--json']);
    assert.equal(json.code, 0, json.stderr);
    const body = JSON.parse(json.stdout) as { sandboxId: string; killed: number[]; alreadyExited: { pid: number; exitCode: number | null; signal: string | null }[] };
    assert.equal(body.sandboxId, id);
    assert.deepEqual(body.killed, [Number(running)]);
    assert.deepEqual(body.alreadyExited.map((p) => [p.pid, p.exitCode, p.signal]), [[Number(killed), null, 'SIGKILL'], [Number(exited), 3, null]]);
    assert.match((await ramify(['sandbox', 'kill-process', id, killed])).stdout, new RegExp(`^${killed} had already exited \\(killed by SIGKILL\\)$`, 'm'));

    const mixed = await ramify(['sandbox', 'kill-process', id, exited, '999999']);
    assert.equal(mixed.code, 1);
    assert.equal(mixed.stdout, `${exited} had already exited (exit code 3)\n`, 'what was done is printed before the error');
    assert.match(mixed.stderr, new RegExp(`^ramify: PROCESS_NOT_FOUND: no process 999999 in sandbox ${id}$`, 'm'));
    const mixedJson = await ramify(['--json', 'sandbox', 'kill-process', id, exited, '999999']);
    assert.equal(mixedJson.code, 1);
    assert.equal(mixedJson.stdout, '');
    assert.match(mixedJson.stderr, new RegExp(`no process 999999 in sandbox ${id} \\(${exited} had already exited \\(exit code 3\\)\\)`));
    assert.match((await ramify(['sandbox', 'kill-process', '--help'])).stdout, /already exited is left alone, exit code 0/);
  });

  test('attach replays the output from the start, follows to the exit and exits with its code', async () => {
    const id = await newSandbox();
    const pid = (await ramify(['sandbox', 'exec', '-b', id, '--', 'two-lines'])).stdout.trim();
    const attached = await ramify(['sandbox', 'attach', id, pid]);
    assert.equal(attached.code, 3);
    assert.equal(attached.stdout, 'line 1\nline 2\n');
    assert.equal(attached.stderr, 'warn\n');
    const json = await ramify(['sandbox', 'attach', id, pid, '--json']);
    assert.equal(json.code, 3);
    assert.deepEqual(JSON.parse(json.stdout), {
      pid: Number(pid), exitCode: 3, signal: null, error: null, stdout: 'line 1\nline 2\n', stderr: 'warn\n', truncated: false,
      capture: { limitBytes: DEFAULT_MAX_OUTPUT_BYTES, stdout: { keptBytes: 14, totalBytes: 14 }, stderr: { keptBytes: 5, totalBytes: 5 } },
    });
    assert.equal(json.stderr, '', 'no note: nothing was cut');
    const unknown = await ramify(['sandbox', 'attach', id, '999999']);
    assert.equal(unknown.code, 125);
    assert.match(unknown.stderr, /PROCESS_NOT_FOUND/);
  });

  test('--help of exec names --background and how to see and stop the process', async () => {
    const help = await ramify(['sandbox', 'exec', '--help']);
    assert.match(help.stdout, /--background/);
    assert.match(help.stdout, /ramify sandbox ps ID/);
    assert.match(help.stdout, /ramify sandbox kill-process ID PID/);
  });
  test('exec | head: when the reader goes away the remote command is killed and ramify exits 141 quietly', async () => {
    const id = await newSandbox();
    const r = await ramify(['sandbox', 'exec', id, '--', 'ticker'], { closeStdoutOnData: true });
    assert.equal(r.code, 141, r.stderr);
    assert.doesNotMatch(r.stderr, /EPIPE|Error/);
    const ps = JSON.parse((await ramify(['sandbox', 'ps', id, '--json'])).stdout) as { cmd: string; running: boolean }[];
    assert.deepEqual(ps.filter((p) => p.cmd === 'ticker').map((p) => p.running), [false], 'the remote command no longer runs');
  });

  test('attach | head: ramify detaches and exits 141; the process keeps running', async () => {
    const id = await newSandbox();
    const pid = Number((await ramify(['sandbox', 'exec', '--background', id, '--', 'ticker'])).stdout.trim());
    const r = await ramify(['sandbox', 'attach', id, String(pid)], { closeStdoutOnData: true });
    assert.equal(r.code, 141, r.stderr);
    assert.doesNotMatch(r.stderr, /EPIPE|Error/);
    const ps = JSON.parse((await ramify(['sandbox', 'ps', id, '--json'])).stdout) as { pid: number; running: boolean }[];
    assert.equal(ps.find((p) => p.pid === pid)?.running, true);
    assert.equal((await ramify(['sandbox', 'kill-process', id, String(pid)])).code, 0);
  });
});
