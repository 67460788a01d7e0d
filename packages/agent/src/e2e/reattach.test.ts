/** End-to-end: connections come and go (as around a checkpoint); processes and their output stay. */
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { collector, eventually, startAgent, type AgentFixture } from '../test-support/agent-harness.js';

/** A safety bound so a broken agent fails the test instead of hanging the run. */
const LIMIT = { timeout: 120_000 };

let agent: AgentFixture;

before(async () => {
  agent = await startAgent();
});

after(async () => {
  await agent.stop();
});

test('re-attach through a new bridge: replay from offsets, then live output, then the exit', LIMIT, async () => {
  const go1 = join(agent.dir, 'go1');
  const go2 = join(agent.dir, 'go2');
  const printed2 = join(agent.dir, 'printed2');
  const waitFor = (f: string): string => `while [ ! -e '${f}' ]; do sleep 0.02; done`;
  const cmd = [
    'echo one; echo e-one >&2',
    waitFor(go1),
    `echo two; echo e-two >&2; touch '${printed2}'`,
    waitFor(go2),
    'echo three; exit 5',
  ].join('\n');

  const first = await agent.connect();
  const c1 = collector();
  const { pid } = await first.client.start({ cmd }, c1.handlers);
  await eventually(() => c1.stdout().toString() === 'one\n' && c1.stderr().toString() === 'e-one\n', 'first output');
  const seen = { stdout: c1.stdout().length, stderr: c1.stderr().length };
  const closedReasons: string[] = [];
  first.client.onClose((r) => closedReasons.push(r));
  await first.client.close();
  assert.equal(first.client.closed, true);
  assert.equal(closedReasons.length, 1);
  await eventually(() => first.bridge.exitCode !== null, 'first bridge exited');

  // While nobody is connected the process goes on printing.
  writeFileSync(go1, '');
  await eventually(() => existsSync(printed2), 'second output printed while detached');

  const second = await agent.connect();
  const info = (await second.client.listProcesses()).find((p) => p.pid === pid);
  assert.equal(info?.running, true);
  assert.equal(info?.stdoutBytes, 'one\ntwo\n'.length);

  const c2 = collector();
  const attached = await second.client.attach(pid, seen, c2.handlers);
  assert.deepEqual(attached.from, seen);
  await eventually(() => c2.stdout().toString() === 'two\n' && c2.stderr().toString() === 'e-two\n', 'replayed output');

  // A second subscriber from offset 0 replays everything.
  const all = collector();
  await second.client.attach(pid, { stdout: 0, stderr: 0 }, all.handlers);

  writeFileSync(go2, '');
  assert.deepEqual(await c2.exited, { exitCode: 5, signal: null, error: null });
  assert.equal(c2.stdout().toString(), 'two\nthree\n');
  await all.exited;
  assert.equal(all.stdout().toString(), 'one\ntwo\nthree\n');
  assert.equal(all.stderr().toString(), 'e-one\ne-two\n');

  // Exited processes can still be attached to: replay, then the exit at once.
  const late = collector();
  await second.client.attach(pid, { stdout: 4, stderr: 0 }, late.handlers);
  assert.equal((await late.exited).exitCode, 5);
  assert.equal(late.stdout().toString(), 'two\nthree\n');
  await second.client.close();
});

test('a detached subscription stops receiving output', LIMIT, async () => {
  const { client } = await agent.connect();
  const c = collector();
  const { pid } = await client.start({ cmd: 'cat', stdin: true }, {});
  const sub = await client.attach(pid, { stdout: 0, stderr: 0 }, c.handlers);
  await client.sendStdin(pid, Buffer.from('a\n'));
  await eventually(() => c.stdout().toString() === 'a\n', 'output before detach');
  sub.detach();
  const witness = collector();
  await client.attach(pid, { stdout: 2, stderr: 0 }, witness.handlers);
  await client.sendStdin(pid, Buffer.from('b\n'));
  await client.closeStdin(pid);
  await witness.exited;
  assert.equal(witness.stdout().toString(), 'b\n');
  assert.equal(c.stdout().toString(), 'a\n');
  await client.close();
});

test('when the channel dies, pending calls reject AGENT_UNREACHABLE at once and onClose fires', LIMIT, async () => {
  const { client, bridge } = await agent.connect();
  const { pid } = await client.start({ cmd: 'sleep 1000' }, {});
  const pending = client.wait(pid);
  const closed = new Promise<string>((resolve) => client.onClose(resolve));
  bridge.kill('SIGKILL');
  await assert.rejects(pending, { code: 'AGENT_UNREACHABLE' });
  assert.match(await closed, /./);
  assert.equal(client.closed, true);
  await assert.rejects(client.ping(), { code: 'AGENT_UNREACHABLE' });
  const downloads = client.readFile('/etc/hostname');
  await assert.rejects(async () => {
    for await (const _ of downloads) void _;
  }, { code: 'AGENT_UNREACHABLE' });

  // The process survived the connection; clean it up through a new one.
  const again = await agent.connect();
  assert.equal((await again.client.listProcesses()).find((p) => p.pid === pid)?.running, true);
  await again.client.signal(pid, 'SIGKILL');
  assert.equal((await again.client.wait(pid)).signal, 'SIGKILL');
  await again.client.close();
});

test('connecting to a dead socket fails with AGENT_UNREACHABLE instead of hanging', LIMIT, async () => {
  const { connectAgent } = await import('../client/agent-client.js');
  const { childStdioChannel } = await import('../client/stdio-channel.js');
  const { spawn } = await import('node:child_process');
  const { COMPILED_ENTRY } = await import('../test-support/agent-harness.js');
  const bridge = spawn(process.execPath, [COMPILED_ENTRY, 'bridge', '--socket', join(agent.dir, 'nope.sock'), '--connect-timeout-ms', '0'], { stdio: ['pipe', 'pipe', 'ignore'] });
  await assert.rejects(connectAgent(childStdioChannel(bridge)), { code: 'AGENT_UNREACHABLE' });
  await eventually(() => bridge.exitCode !== null, 'bridge exited');
  assert.equal(bridge.exitCode, 1);
});
