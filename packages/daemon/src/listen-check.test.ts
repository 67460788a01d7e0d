/**
 * The listeners' check before a start (listen-check.ts): a taken address is `ADDRESS_IN_USE` naming the
 * listener, the address, the process holding it (a child process here, named by `ss -ltnp` when the host
 * has it) and the flag to change; two listeners given one address conflict; `serve()` refuses to start, says
 * so in its log and frees the data directory. The real daemon's network is left untouched by such a start:
 * real-start-failures.test.ts.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DestinationStream } from 'pino';
import { FakeNetwork, FakeRuntime } from '@ramify/core/testing';
import { isRamifyError } from '@ramify/contracts';
import { dataDirHolder } from './data-dir-lock.js';
import { checkListeners, type ListenerKind } from './listen-check.js';
import { serve } from './serve.js';
import { freePort, holdPort } from './testing/daemon-process.js';

const hasSs = spawnSync('sh', ['-c', 'command -v ss']).status === 0;
const holders: ChildProcess[] = [];
const dirs: string[] = [];

after(async () => {
  for (const child of holders) child.kill('SIGKILL');
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** {@link holdPort}, killed after the tests. */
async function held(): Promise<{ pid: number; port: number }> {
  const holder = await holdPort();
  holders.push(holder.child);
  return holder;
}

/** A log destination that keeps the JSON lines written to it. */
function logCapture(): DestinationStream & { lines(): Array<Record<string, unknown>> } {
  const written: string[] = [];
  return { write: (line: string) => void written.push(line), lines: () => written.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('checkListeners', () => {
  const flags: Record<ListenerKind, RegExp> = {
    api: /^the API address 127\.0\.0\.1:(\d+) is in use by another process \((.*)\)\. Stop it, or give this daemon another --port \(0 picks a free one\) or --host$/,
    ingress: /^the ingress \(port URLs\) address 127\.0\.0\.1:(\d+) is in use by another process \((.*)\)\. Stop it, or give this daemon another --ingress-listen ADDR:PORT, or --ingress-listen off for no port URLs$/,
    ssh: /^the SSH gateway address 127\.0\.0\.1:(\d+) is in use by another process \((.*)\)\. Stop it, or give this daemon another --ssh-listen ADDR:PORT, or --ssh-listen off for no SSH gateway$/,
    metrics: /^the metrics address 127\.0\.0\.1:(\d+) is in use by another process \((.*)\)\. Stop it, or give this daemon another --metrics-listen ADDR:PORT, or no --metrics-listen$/,
  };
  for (const kind of Object.keys(flags) as ListenerKind[]) {
    test(`a taken ${kind} address is ADDRESS_IN_USE naming the listener, the address, its holder and the flag`, async () => {
      const taken = await held();
      const free = await freePort();
      const others = (['api', 'ingress', 'ssh'] as const).filter((k) => k !== kind).map((k, i) => ({ kind: k, host: '127.0.0.1', port: i === 0 ? free : 0 }));
      await assert.rejects(checkListeners([...others, { kind, host: '127.0.0.1', port: taken.port }]), (err: unknown) => {
        assert.ok(isRamifyError(err) && err.code === 'ADDRESS_IN_USE', String(err));
        const m = flags[kind].exec(err.message);
        assert.ok(m, err.message);
        assert.equal(Number(m[1]), taken.port);
        if (hasSs) assert.match(m[2] as string, new RegExp(`^pid ${taken.pid}, program require\\('net'\\)`), 'ss names the holding process');
        assert.deepEqual({ ...err.details, heldBy: typeof err.details?.heldBy }, { listener: kind, address: `127.0.0.1:${taken.port}`, heldBy: 'string' });
        assert.equal(err.status, 409);
        return true;
      });
      // The check bound and closed the free one: it is free again.
      const again = createServer();
      await new Promise<void>((resolve, reject) => again.once('error', reject).listen(free, '127.0.0.1', () => resolve()));
      await new Promise((resolve) => again.close(resolve));
    });
  }

  test('every taken address is named in one error: the first in full, the others with their flags (details.alsoTaken)', async () => {
    const [ingress, ssh] = [await held(), await held()];
    await assert.rejects(checkListeners([{ kind: 'api', host: '127.0.0.1', port: await freePort() }, { kind: 'ingress', host: '127.0.0.1', port: ingress.port }, { kind: 'ssh', host: '127.0.0.1', port: ssh.port }]), (err: unknown) => {
      assert.ok(isRamifyError(err) && err.code === 'ADDRESS_IN_USE', String(err));
      assert.match(err.message, new RegExp(`^the ingress \\(port URLs\\) address 127\\.0\\.0\\.1:${ingress.port} is in use by .*\\. Also taken: the SSH gateway address 127\\.0\\.0\\.1:${ssh.port} \\(another --ssh-listen ADDR:PORT, or --ssh-listen off for no SSH gateway\\)$`));
      assert.equal(err.details?.listener, 'ingress');
      assert.deepEqual(err.details?.alsoTaken, [{ listener: 'ssh', address: `127.0.0.1:${ssh.port}` }]);
      return true;
    });
  });

  test('two listeners given one address: the second is refused, naming the first; port 0 is never checked', async () => {
    const port = await freePort();
    await assert.rejects(checkListeners([{ kind: 'api', host: '127.0.0.1', port }, { kind: 'ssh', host: '127.0.0.1', port }]), (err: unknown) => {
      assert.ok(isRamifyError(err) && err.code === 'ADDRESS_IN_USE', String(err));
      assert.equal(err.message, `the SSH gateway address 127.0.0.1:${port} is in use by this daemon's own API listener (two listeners were given the same address). `
        + 'Give this daemon another --ssh-listen ADDR:PORT, or --ssh-listen off for no SSH gateway');
      return true;
    });
    await checkListeners([{ kind: 'api', host: '127.0.0.1', port: 0 }, { kind: 'ingress', host: '127.0.0.1', port: 0 }]);
  });
});

test('serve() with a taken API port: ADDRESS_IN_USE before anything is opened, in its log too, and the data directory is free again', async () => {
  const taken = await held();
  const dataDir = await mkdtemp(join(tmpdir(), 'ramify-listen-check-'));
  dirs.push(dataDir);
  const runtime = new FakeRuntime();
  const log = logCapture();
  await assert.rejects(serve({
    dataDir, port: taken.port, logLevel: 'info', logDestination: log, print: () => undefined,
    overrides: { runtimes: [runtime], network: new FakeNetwork(), connectAgent: runtime.connectAgent, templateBuilder: null },
  }), { code: 'ADDRESS_IN_USE' });
  const failed = log.lines().filter((l) => l.msg === 'ramify failed to start');
  assert.deepEqual(failed.map((l) => [l.code, (l.details as { listener?: string } | undefined)?.listener]), [['ADDRESS_IN_USE', 'api']], 'the log says why, with the details');
  assert.deepEqual(log.lines().map((l) => l.msg), ['ramify failed to start'], 'nothing was started before the check');
  assert.equal(dataDirHolder(dataDir), null);
});
