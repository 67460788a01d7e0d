/** End-to-end: real agent server, real bridge processes, real commands. */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { isRamifyError } from '@ramify/contracts';
import type { AgentClient } from '../client/agent-client.js';
import { collector, eventually, startAgent, type AgentFixture } from '../test-support/agent-harness.js';

/** A safety bound so a broken agent fails the test instead of hanging the run. */
const LIMIT = { timeout: 120_000 };

let agent: AgentFixture;
let client: AgentClient;

before(async () => {
  agent = await startAgent();
  ({ client } = await agent.connect());
});

after(async () => {
  await agent.stop();
});

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

test('30 MB of stdout arrives byte-exact', LIMIT, async () => {
  const src = join(agent.dir, 'big.bin');
  const data = randomBytes(30 * 1024 * 1024);
  writeFileSync(src, data);
  const c = collector();
  const { pid } = await client.start({ cmd: `cat '${src}'` }, c.handlers);
  const exit = await c.exited;
  assert.deepEqual(exit, { exitCode: 0, signal: null, error: null });
  assert.equal(c.stdout().length, data.length);
  assert.equal(sha256(c.stdout()), sha256(data));
  const info = (await client.listProcesses()).find((p) => p.pid === pid);
  assert.equal(info?.stdoutBytes, data.length);
  assert.equal(info?.running, false);
});

test('random binary on stdout and stderr arrives intact', LIMIT, async () => {
  const bin = randomBytes(300_000);
  const src = join(agent.dir, 'rand.bin');
  writeFileSync(src, bin);
  const c = collector();
  await client.start({ cmd: `cat '${src}'; cat '${src}' >&2` }, c.handlers);
  await c.exited;
  assert.equal(sha256(c.stdout()), sha256(bin));
  assert.equal(sha256(c.stderr()), sha256(bin));
});

test('multi-byte UTF-8 split across writes and chunk boundaries is reassembled exactly', LIMIT, async () => {
  // '€' = e2 82 ac, '𝄞' = f0 9d 84 9e: written in pieces, with pauses, by separate printf calls.
  const c = collector();
  const cmd = `printf '\\xe2\\x82'; sleep 0.1; printf '\\xac|\\xf0\\x9d'; sleep 0.1; printf '\\x84\\x9e|héllo'`;
  await client.start({ cmd }, c.handlers);
  await c.exited;
  assert.equal(new TextDecoder('utf-8', { fatal: true }).decode(c.stdout()), '€|𝄞|héllo');

  // Large output: chunk boundaries (64 KiB blocks, 256 KiB frames) are not multiples of 3 or 4 bytes.
  const text = '€'.repeat(100_000) + '𝄞'.repeat(70_000) + 'ü'.repeat(50_000);
  const src = join(agent.dir, 'utf8.txt');
  writeFileSync(src, text);
  const big = collector();
  await client.start({ cmd: `cat '${src}'` }, big.handlers);
  await big.exited;
  assert.equal(new TextDecoder('utf-8', { fatal: true }).decode(big.stdout()), text);
  const splitsMidCharacter = big.stdoutChunks.some((chunk) => {
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(chunk);
      return false;
    } catch {
      return true;
    }
  });
  assert.ok(splitsMidCharacter, 'some chunk boundary fell inside a character');
});

test('an unknown command: bash says "command not found" and exits 127', LIMIT, async () => {
  const c = collector();
  await client.start({ cmd: 'definitely-not-a-command-xyz --flag' }, c.handlers);
  const exit = await c.exited;
  assert.equal(exit.exitCode, 127);
  assert.match(c.stderr().toString(), /definitely-not-a-command-xyz: command not found/);
});

test('a missing cwd is CWD_NOT_FOUND naming the path', LIMIT, async () => {
  const missing = join(agent.dir, 'no such dir');
  await assert.rejects(client.start({ cmd: 'true', cwd: missing }, {}), (err: unknown) => {
    assert.ok(isRamifyError(err));
    assert.equal(err.code, 'CWD_NOT_FOUND');
    assert.ok(err.message.includes(missing));
    return true;
  });
});

test('cwd, envs, identity envs and RAMIFY_SANDBOX_ID reach the command', LIMIT, async () => {
  const report = await client.applyIdentity({ sandboxId: 'sbx_test1', hostname: hostname(), envs: { A: 'from-identity', B: 'identity' }, clockMs: Date.now(), entropy: randomBytes(32) });
  assert.equal(report.entropy.bytes, 32);
  assert.equal(report.clock.adjusted, false);
  const c = collector();
  await client.start({ cmd: 'echo "$PWD|$A|$B|$RAMIFY_SANDBOX_ID"', cwd: agent.dir, envs: { B: 'per-command' } }, c.handlers);
  await c.exited;
  assert.equal(c.stdout().toString(), `${agent.dir}|from-identity|per-command|sbx_test1\n`);
});

test('runs as another user from /etc/passwd', LIMIT, async () => {
  const c = collector();
  await client.start({ cmd: 'id -u; echo "$USER"', user: 'nobody', cwd: '/' }, c.handlers);
  await c.exited;
  assert.equal(c.stdout().toString(), '65534\nnobody\n');
  await assert.rejects(client.start({ cmd: 'true', user: 'no-such-user-xyz' }, {}), { code: 'BAD_REQUEST' });
});

test('stdin: closed unless asked for; send and close when asked', LIMIT, async () => {
  const closed = collector();
  await client.start({ cmd: 'cat; echo done' }, closed.handlers);
  await closed.exited;
  assert.equal(closed.stdout().toString(), 'done\n');

  const c = collector();
  const { pid } = await client.start({ cmd: 'cat | tr a-z A-Z', stdin: true }, c.handlers);
  await client.sendStdin(pid, Buffer.from('hello '));
  await client.sendStdin(pid, Buffer.from('world\n'));
  await client.closeStdin(pid);
  const exit = await c.exited;
  assert.equal(exit.exitCode, 0);
  assert.equal(c.stdout().toString(), 'HELLO WORLD\n');
  await assert.rejects(client.sendStdin(pid, Buffer.from('late')), { code: 'PROCESS_EXITED' });
  const noStdin = await client.start({ cmd: 'true' }, {});
  await assert.rejects(client.sendStdin(noStdin.pid, Buffer.from('x')), { code: 'INVALID_STATE', message: /started without stdin/ });
  const open = await client.start({ cmd: 'sleep 1000', stdin: true }, {});
  await client.closeStdin(open.pid);
  await assert.rejects(client.sendStdin(open.pid, Buffer.from('x')), { code: 'INVALID_STATE', message: /stdin of process \d+ is closed/ });
  await client.signal(open.pid, 'SIGKILL');
});

test('stdin to a process that has exited says so, with its exit code or signal', LIMIT, async () => {
  const quit = await client.start({ cmd: 'exit 3', stdin: true }, {});
  assert.equal((await client.wait(quit.pid)).exitCode, 3);
  await assert.rejects(client.sendStdin(quit.pid, Buffer.from('x')), (err: unknown) => {
    assert.ok(isRamifyError(err));
    assert.equal(err.code, 'PROCESS_EXITED');
    assert.match(err.message, new RegExp(`process ${quit.pid} exited with code 3`));
    assert.deepEqual(err.details, { pid: quit.pid, exitCode: 3, signal: null });
    return true;
  });
  await assert.rejects(client.closeStdin(quit.pid), { code: 'PROCESS_EXITED' });

  const killed = await client.start({ cmd: 'sleep 1000', stdin: true }, {});
  await client.signal(killed.pid, 'SIGKILL');
  await client.wait(killed.pid);
  await assert.rejects(client.sendStdin(killed.pid, Buffer.from('x')), { code: 'PROCESS_EXITED', message: /was killed by SIGKILL/ });
});

test('signals go to the process group', LIMIT, async () => {
  const c = collector();
  const { pid } = await client.start({ cmd: "trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.05; done" }, c.handlers);
  await eventually(() => c.stdout().toString().includes('ready'), 'trap installed');
  await client.signal(pid, 'SIGTERM');
  assert.deepEqual(await c.exited, { exitCode: 3, signal: null, error: null });
  assert.match(c.stdout().toString(), /got-term/);

  const k = collector();
  const killed = await client.start({ cmd: 'sleep 1000' }, k.handlers);
  await client.signal(killed.pid, 'SIGKILL');
  assert.deepEqual(await client.wait(killed.pid), { exitCode: null, signal: 'SIGKILL', error: null });
  await assert.rejects(client.signal(killed.pid, 'SIGTERM'), { code: 'PROCESS_NOT_FOUND' });
  await assert.rejects(client.wait(999_999_999), { code: 'PROCESS_NOT_FOUND' });
});

test('timeout kills the whole tree, setsid children included', LIMIT, async () => {
  const marker = `${Date.now() % 100000}`;
  // A grandchild through an intermediate bash, a setsid'd grandchild, and a direct child.
  const cmd = [
    `bash -c 'sleep 7${marker}1; true' &`,
    `(setsid sleep 7${marker}2; true) &`,
    `sleep 7${marker}3 &`,
    'echo started; wait',
  ].join('\n');
  const c = collector();
  const { pid } = await client.start({ cmd, timeoutMs: 3000 }, c.handlers);
  await eventually(() => sleepers(marker).length === 3, 'all three sleeps running');
  const exit = await c.exited;
  assert.equal(exit.error, 'timeout');
  assert.equal(exit.signal, 'SIGKILL');
  assert.equal((await client.wait(pid)).error, 'timeout');
  await eventually(() => sleepers(marker).length === 0, 'every sleep is gone');
});

/** Live `sleep 7<marker>N` processes, found in /proc. */
function sleepers(marker: string): number[] {
  return agent.taggedPids().filter((pid) => {
    const cmdline = readCmdline(pid);
    return cmdline.startsWith('sleep\0') && cmdline.includes(`7${marker}`);
  });
}

function readCmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return '';
  }
}

test('background children holding the pipes do not delay the exit forever', LIMIT, async () => {
  const c = collector();
  const { pid } = await client.start({ cmd: 'sleep 1000 & echo parent-done' }, c.handlers);
  const exit = await c.exited;
  assert.equal(exit.exitCode, 0);
  assert.equal(c.stdout().toString(), 'parent-done\n');
  const running = (await client.listProcesses()).find((p) => p.pid === pid);
  assert.equal(running?.running, false);
});

test('listProcesses reports the processes the agent started', LIMIT, async () => {
  const list = await client.listProcesses();
  assert.ok(list.length >= 10);
  assert.ok(list.every((p) => typeof p.startedAt === 'string' && typeof p.cmd === 'string'));
});

// Last: it makes the agent forget the exited processes of the tests above.
test('a new sandbox id forgets exited processes (a template build\'s, a parent\'s); running ones stay', LIMIT, async () => {
  const identity = (sandboxId: string) => ({ sandboxId, hostname: hostname(), envs: {}, clockMs: Date.now(), entropy: randomBytes(32) });
  await client.applyIdentity(identity('sbx_forget1'));
  const done = collector();
  const { pid: exitedPid } = await client.start({ cmd: 'echo setup-step' }, done.handlers);
  await done.exited;
  const { pid: runningPid } = await client.start({ cmd: 'sleep 60' }, {});
  const pids = async (): Promise<number[]> => (await client.listProcesses()).map((p) => p.pid);
  await client.applyIdentity(identity('sbx_forget1'));
  assert.ok((await pids()).includes(exitedPid), 'the same sandbox (resume) keeps its history');
  await client.applyIdentity(identity('sbx_forget2'));
  const after = await pids();
  assert.ok(!after.includes(exitedPid), 'another sandbox does not list the exited process');
  assert.ok(after.includes(runningPid), 'a running process stays listed');
  await client.signal(runningPid, 'SIGKILL');
});
