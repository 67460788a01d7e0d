/** End-to-end with a small output ring: bounded memory, no loss for attached readers, drops when detached. */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { collector, eventually, startAgent, type AgentFixture } from '../test-support/agent-harness.js';

const RING = 64 * 1024;
const LIMIT = { timeout: 120_000 };
let agent: AgentFixture;

before(async () => {
  agent = await startAgent({ args: ['--ring-bytes', String(RING)] });
});

after(async () => {
  await agent.stop();
});

test('an attached reader loses nothing even when output is far larger than the ring', LIMIT, async () => {
  const data = randomBytes(5 * 1024 * 1024);
  const src = join(agent.dir, 'five.bin');
  writeFileSync(src, data);
  const { client } = await agent.connect();
  const c = collector();
  await client.start({ cmd: `cat '${src}'` }, {
    ...c.handlers,
    // A slow consumer: the agent must hold the process back rather than drop bytes.
    onStdout: (chunk) => {
      const until = Date.now() + 1;
      while (Date.now() < until);
      c.handlers.onStdout(chunk);
    },
  });
  await c.exited;
  const hash = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
  assert.equal(hash(c.stdout()), hash(data));
  await client.close();
});

test('with nobody attached the oldest output is dropped and attach reports where replay starts', LIMIT, async () => {
  const go = join(agent.dir, 'go');
  const first = await agent.connect();
  const { pid } = await first.client.start({ cmd: `while [ ! -e '${go}' ]; do sleep 0.02; done; head -c 300000 /dev/zero; printf tail` }, {});
  await first.client.close();
  writeFileSync(go, '');
  const second = await agent.connect();
  await eventually(async () => (await second.client.listProcesses()).find((p) => p.pid === pid)?.running === false, 'process exited');
  const c = collector();
  const { from } = await second.client.attach(pid, { stdout: 0, stderr: 0 }, c.handlers);
  const total = 300_000 + 'tail'.length;
  assert.deepEqual(from, { stdout: total - RING, stderr: 0 });
  await c.exited;
  assert.equal(c.stdout().length, RING);
  assert.equal(c.stdout().subarray(-4).toString(), 'tail');
  await second.client.close();
});
