/**
 * The Runtime conformance suite: the port's behaviours every runtime keeps (runtime.ts), checked through
 * the port alone with the real agent inside: boot, the agent channel as an exec bridge, usage counters,
 * checkpoint, restore of one image into several independent sandboxes (files, memory and running
 * processes carried over), a fork point that keeps its sandbox running, kill, a restore of an image still
 * arriving (no byte read before it is all there; a failed arrival fails the restore), and bad input. The cases
 * run in order on shared sandboxes (a boot is expensive); a case whose optional method the runtime lacks
 * is skipped with that reason. `packages/conformance` is the end-to-end suite through a daemon; this one
 * stops at the port, so a new runtime proves itself before any daemon runs it.
 */
import assert from 'node:assert/strict';
import { mkdir, open, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { RamifyError, type AgentSession } from '@ramify/contracts';
import type { RuntimeSandboxSpec } from '../runtime.js';
import type { RuntimeHarness } from './harness.js';

/** A command's outcome. */
interface Ran {
  exitCode: number | null;
  stdout: string;
}

/** Make `to` hold `from`'s files at their full sizes, all zeros: an image as a download prepares it, before its bytes arrive. */
async function prepareArriving(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const name of await readdir(from)) {
    const file = await open(join(to, name), 'w');
    await file.truncate((await stat(join(from, name))).size).finally(() => file.close());
  }
}

/** Write `from`'s bytes into the files `prepareArriving` made (in place: a runtime may hold them open already). */
async function arrive(from: string, to: string): Promise<void> {
  for (const name of await readdir(from)) {
    const file = await open(join(to, name), 'r+');
    await file.write(await readFile(join(from, name)), 0).finally(() => file.close());
  }
}

/** Register the suite for `harness` with node:test. */
export function runtimeConformance(harness: RuntimeHarness): void {
  const { runtime } = harness;
  const id = (name: string): string => `${harness.idPrefix}-${name}`;
  const created = new Set<string>();
  /** The open session of each sandbox (the port promises one channel at a time: a virtio-serial port has one host end). */
  const sessions = new Map<string, AgentSession>();
  const closeSessions = async (): Promise<void> => {
    for (const s of sessions.values()) await s.close().catch(() => undefined);
    sessions.clear();
  };
  const opts = { timeout: harness.caseTimeoutMs };

  const spec = async (name: string, slotOffset: number): Promise<RuntimeSandboxSpec> => {
    const sandboxId = id(name);
    created.add(sandboxId);
    const network = await harness.network.attach(sandboxId, harness.firstSlot + slotOffset);
    return { sandboxId, rootfsDir: harness.rootfsDir, hostname: sandboxId, resources: harness.resources, network };
  };

  /** The sandbox's session, or a new one (retried until it answers a ping or `agentTimeoutMs` passed). */
  const session = async (name: string): Promise<AgentSession> => {
    const open = sessions.get(name);
    if (open && !open.closed) return open;
    const deadline = Date.now() + harness.agentTimeoutMs;
    for (;;) {
      try {
        const opened = await harness.connectAgent(await runtime.openAgentChannel(id(name)), { pingTimeoutMs: 5_000 });
        await opened.ping();
        sessions.set(name, opened);
        return opened;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`the agent of ${id(name)} did not answer within ${harness.agentTimeoutMs} ms: ${String(err)}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  };

  /** Run `cmd` to its end through `agent`. */
  const run = async (agent: AgentSession, cmd: string): Promise<Ran> => {
    let stdout = '';
    const ended = new Promise<Ran>((resolve) => {
      void agent.start({ cmd }, {
        onStdout: (chunk) => (stdout += Buffer.from(chunk).toString('utf8')),
        onExit: (exit) => resolve({ exitCode: exit.exitCode, stdout }),
      });
    });
    return ended;
  };

  /** The counter the background process of the checkpointed sandbox keeps writing. */
  const count = async (agent: AgentSession): Promise<number> => Number((await run(agent, 'cat /root/count')).stdout.trim());

  describe(`Runtime conformance: ${harness.name}`, () => {
    let counterPid = 0;
    let image = '';

    after(async () => {
      await closeSessions();
      for (const sandboxId of created) await runtime.kill(sandboxId).catch(() => undefined);
    });

    it('boot starts an instance: running, listed, alive; its agent answers over the agent channel', opts, async () => {
      await runtime.boot(await spec('src', 0), [...harness.initArgv]);
      assert.equal((await runtime.status(id('src'))).state, 'running');
      assert.ok((await runtime.list()).includes(id('src')), 'list() names it');
      if (runtime.isAlive) assert.equal(await runtime.isAlive(id('src')), true);
      await session('src');
    });

    it('the agent channel is an exec bridge: a command runs inside with its output and exit code; a closed channel can be opened again', opts, async () => {
      const first = await session('src');
      assert.deepEqual(await run(first, 'echo "inside $(hostname)"; exit 3'), { exitCode: 3, stdout: `inside ${id('src')}\n` });
      // One channel at a time is all the port promises (a virtio-serial port has one host end): core keeps one session per sandbox.
      await closeSessions();
      const second = await session('src');
      assert.deepEqual(await run(second, 'echo again'), { exitCode: 0, stdout: 'again\n' });
    });

    it('usage reads the running instance\'s counters', { ...opts, skip: runtime.usage ? false : 'the runtime has no usage()' }, async () => {
      const agent = await session('src');
      await run(agent, 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done');
      const usage = await runtime.usage!(id('src'));
      assert.ok(usage, 'counters of a running instance');
      assert.ok(usage.instance.length > 0);
      assert.ok(usage.cpuTimeUs > 0, `cpuTimeUs ${usage.cpuTimeUs}`);
      assert.ok(usage.memoryUsedBytes === null || usage.memoryUsedBytes > 0);
    });

    it('checkpoint writes an image of the running sandbox, reports its size, and leaves no instance running', opts, async () => {
      const agent = await session('src');
      assert.equal((await run(agent, 'echo parent > /root/marker')).exitCode, 0);
      // A process that outlives the command that started it: the agent keeps it; restores must carry it on.
      ({ pid: counterPid } = await agent.start({ cmd: 'i=0; while :; do i=$((i+1)); echo $i > /root/count; sleep 0.1; done' }, {}));
      for (let i = 0; i < 50 && !(await count(agent) > 0); i++) await new Promise((r) => setTimeout(r, 100));
      await closeSessions();
      image = join(harness.workDir, 'image-src');
      const { sizeBytes } = await runtime.checkpoint(id('src'), image);
      assert.ok(sizeBytes > 0, `image of ${sizeBytes} bytes`);
      assert.notEqual((await runtime.status(id('src'))).state, 'running');
      // isAlive is for running instances: for one it no longer has, "true when unsure" is allowed (runtime.ts).
    });

    it('restore brings one image up twice into independent sandboxes: files, memory and running processes carry over', opts, async () => {
      await runtime.restore(await spec('f1', 1), image);
      await runtime.restore(await spec('f2', 2), image);
      const [f1, f2] = [await session('f1'), await session('f2')];
      for (const [name, agent] of [['f1', f1], ['f2', f2]] as const) {
        assert.equal((await runtime.status(id(name))).state, 'running', name);
        assert.equal((await run(agent, 'cat /root/marker')).stdout, 'parent\n', `${name}: the image's files`);
        assert.equal((await run(agent, `kill -0 ${counterPid}`)).exitCode, 0, `${name}: the counter process runs on`);
        const before = await count(agent);
        await new Promise((r) => setTimeout(r, 600));
        assert.ok((await count(agent)) > before, `${name}: and keeps counting from ${before}`);
      }
      assert.equal((await run(f1, 'echo mine > /root/only-f1')).exitCode, 0);
      assert.equal((await run(f2, 'test -e /root/only-f1')).exitCode, 1, 'a write in one fork is not seen in the other');
    });

    it('checkpointKeepRunning takes a fork point: the sandbox runs on and the image restores', { ...opts, skip: runtime.checkpointKeepRunning ? false : 'the runtime has no checkpointKeepRunning()' }, async () => {
      await closeSessions();
      const point = join(harness.workDir, 'image-f1-point');
      const { sizeBytes } = await runtime.checkpointKeepRunning!(id('f1'), point);
      assert.ok(sizeBytes > 0);
      assert.equal((await runtime.status(id('f1'))).state, 'running', 'the sandbox runs on');
      const f1 = await session('f1');
      const before = await count(f1);
      await new Promise((r) => setTimeout(r, 600));
      assert.ok((await count(f1)) > before, 'its processes too');
      await runtime.restore(await spec('f3', 3), point);
      assert.equal((await run(await session('f3'), 'cat /root/only-f1')).stdout, 'mine\n', 'the point has the files written before it');
    });

    it('kill stops and deletes an instance; killing it again, or an unknown sandbox, is a no-op; an unknown sandbox is missing', opts, async () => {
      await runtime.kill(id('f2'));
      assert.notEqual((await runtime.status(id('f2'))).state, 'running');
      await runtime.kill(id('f2'));
      await runtime.kill(id('never-made'));
      assert.equal((await runtime.status(id('never-made'))).state, 'missing');
      assert.equal((await runtime.list()).includes(id('never-made')), false);
    });

    it('restore of an image still arriving reads none of its bytes before imageArriving resolves: files, memory and processes carry over', opts, async () => {
      // The files are zeros until the image "arrives": a runtime that read any of them early would restore zeros.
      const arriving = join(harness.workDir, 'image-arriving');
      await prepareArriving(image, arriving);
      let arrived: () => void = () => undefined;
      const restored = runtime.restore(await spec('late', 5), arriving, { imageArriving: new Promise<void>((resolve) => (arrived = resolve)) });
      let settled = false;
      restored.then(() => (settled = true), () => (settled = true));
      await new Promise((r) => setTimeout(r, 1500)); // time for a runtime to start what it can meanwhile
      assert.equal(settled, false, 'the restore waits for its image');
      await arrive(image, arriving);
      arrived();
      await restored;
      const agent = await session('late');
      assert.equal((await run(agent, 'cat /root/marker')).stdout, 'parent\n', "the image's files");
      assert.equal((await run(agent, `kill -0 ${counterPid}`)).exitCode, 0, 'the counter process runs on');
      const before = await count(agent);
      await new Promise((r) => setTimeout(r, 600));
      assert.ok((await count(agent)) > before, `and keeps counting from ${before}`);
    });

    it('restore of an image whose arrival fails rejects with that error and leaves nothing running', opts, async () => {
      const arriving = join(harness.workDir, 'image-never-arrives');
      await prepareArriving(image, arriving);
      const failure = new RamifyError('RUNTIME_ERROR', 'chunk 00ff in the bucket is corrupt (conformance suite)', { reason: 'checksum-mismatch' });
      const imageArriving = new Promise<void>((_, reject) => setTimeout(() => reject(failure), 1500));
      await assert.rejects(runtime.restore(await spec('never', 6), arriving, { imageArriving }), (err: unknown) => err === failure);
      assert.notEqual((await runtime.status(id('never'))).state, 'running');
    });

    it('restore refuses a directory that is not an image, with a typed error, and leaves nothing running', opts, async () => {
      const notAnImage = join(harness.workDir, 'not-an-image');
      await mkdir(notAnImage, { recursive: true });
      await assert.rejects(runtime.restore(await spec('bad', 4), notAnImage), (err: unknown) =>
        err instanceof Error && typeof (err as { code?: unknown }).code === 'string');
      assert.notEqual((await runtime.status(id('bad'))).state, 'running');
    });

    it('settleInterrupted returns at once for a sandbox with nothing in flight (no channel open: an agent bridge is a runtime command too)', opts, async () => {
      await closeSessions();
      const started = Date.now();
      await runtime.settleInterrupted(id('f1'));
      assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`);
      assert.equal((await runtime.status(id('f1'))).state, 'running');
    });
  });
}
