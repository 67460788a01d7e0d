/**
 * Conformance: pause, resume, fork and snapshot keep processes, files and listening ports; forks are
 * independent, re-seeded and see the current wall clock; many cycles in a row lose nothing; a killed
 * sandbox refuses commands with `SANDBOX_NOT_FOUND`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Sandbox } from '@ramify/sdk';
import type { SuiteContext } from '../context.js';
import { rejectsWithCode, sh, sleep, waitFor } from '../support.js';

/** Bash loop appending 1, 2, 3, ... to `path`, one line every 50 ms. */
export const appenderCmd = (path: string): string => `i=0; while true; do i=$((i+1)); echo $i >> ${path}; sleep 0.05; done`;

/** Lines of an appender log: asserts they are exactly 1..N (nothing lost, nothing repeated) and returns N. */
export async function appenderCount(sbx: Sandbox, path: string): Promise<number> {
  const lines = (await sbx.files.read(path)).split('\n').filter((l) => l !== '');
  // The last line may be half written at the moment of reading.
  const whole = lines.slice(0, -1);
  whole.forEach((line, i) => assert.equal(line, String(i + 1), `line ${i + 1} of ${path}`));
  return whole.length;
}

/** Title of the ten-cycles case (a target may list a known bug under a title: `knownBugs`). */
const TEN_CYCLES = 'ten pause/resume cycles in a row lose nothing';

/**
 * Resume `sbx` when an earlier case that failed midway left it paused, so the next case tests its own
 * subject instead of failing on INVALID_STATE (the earlier failure is reported by that case).
 */
async function runningForThisCase(sbx: Sandbox): Promise<void> {
  if ((await sbx.getInfo()).state === 'paused') await sbx.resume();
}

const PAGE = 'served from before the pause\n';
const curlPage = (sbx: Sandbox): Promise<string> => sh(sbx, 'curl -sf http://127.0.0.1:8000/index.html');

/** Register the `lifecycle` group. */
export function registerLifecycleCases(ctx: SuiteContext): void {
  describe('lifecycle', () => {
    let main: Sandbox;
    let serverPid = 0;
    let forks: Sandbox[] = [];
    before(async () => {
      main = await ctx.create();
    });
    after(() => ctx.killAll());

    test('processes, files and a listening port survive pause/resume', async () => {
      await main.files.write('/root/www/index.html', PAGE);
      const server = await main.commands.run('python3 -m http.server 8000 --bind 127.0.0.1', { background: true, cwd: '/root/www' });
      serverPid = server.pid;
      await server.disconnect();
      assert.equal(await waitFor(() => curlPage(main), { timeoutMs: 30_000, what: 'the http server' }), PAGE);

      assert.equal((await main.pause()).state, 'paused');
      assert.equal((await main.getInfo()).state, 'paused');
      await rejectsWithCode(main.commands.run('true'), 'INVALID_STATE');
      assert.equal((await main.resume()).state, 'running');

      assert.equal(await curlPage(main), PAGE, 'the listening port answers after resume');
      assert.equal(await main.files.read('/root/www/index.html'), PAGE);
      const listed = (await main.commands.list()).find((p) => p.pid === serverPid);
      assert.ok(listed, 'the server process is still listed');
      assert.equal(listed.running, true);
      assert.match(listed.cmd, /http\.server/);
    });

    test(TEN_CYCLES, ctx.caseOptions(TEN_CYCLES, { extended: true }), async () => {
      const appender = await main.commands.run(appenderCmd('/root/appender.log'), { background: true });
      await appender.disconnect();
      let lastCount = 0;
      for (let cycle = 1; cycle <= 10; cycle += 1) {
        await main.files.write('/root/counter', String(cycle));
        assert.equal((await main.pause()).state, 'paused', `pause #${cycle}`);
        assert.equal((await main.resume()).state, 'running', `resume #${cycle}`);
        assert.equal(await main.files.read('/root/counter'), String(cycle), `counter after cycle ${cycle}`);
        const count = await appenderCount(main, '/root/appender.log');
        assert.ok(count >= lastCount, `the appender log never shrinks (${count} after ${lastCount})`);
        lastCount = count;
      }
      await waitFor(async () => (await appenderCount(main, '/root/appender.log')) > lastCount + 5, { timeoutMs: 30_000, what: 'the appender to keep appending' });
      const procs = await main.commands.list();
      assert.equal(procs.find((p) => p.pid === appender.pid)?.running, true, 'the appender still runs');
      assert.equal(procs.find((p) => p.pid === serverPid)?.running, true, 'the http server still runs');
      assert.equal(await curlPage(main), PAGE);
    });

    test('forks are independent, read fresh entropy and see the current wall clock', async (t) => {
      await runningForThisCase(main);
      await main.files.write('/root/shared.txt', 'from the parent');
      const monotonicNow = async (s: Sandbox): Promise<number> => Number((await sh(s, `python3 -c 'import time; print(time.monotonic())'`)).trim());
      const monotonicBefore = await monotonicNow(main);
      const pausedAt = Date.now();
      await main.pause();
      // Let the snapshot's clock fall behind the host's, so a fork that kept it would be caught.
      await sleep(6_000);
      forks = await main.fork({ count: 3 });
      assert.equal(forks.length, 3);
      await main.resume();
      // CLOCK_MONOTONIC never goes back across a pause; how far it moves is the runtime's (README: "Clocks").
      const monotonicAfter = await monotonicNow(main);
      assert.ok(monotonicAfter >= monotonicBefore, `CLOCK_MONOTONIC went back across the pause: ${monotonicBefore} -> ${monotonicAfter}`);
      t.diagnostic(`CLOCK_MONOTONIC moved ${(monotonicAfter - monotonicBefore).toFixed(1)} s across a pause of ${((Date.now() - pausedAt) / 1000).toFixed(1)} s (host wall clock, pause to after resume)`);
      const all = [main, ...forks];
      const ids = new Set(all.map((s) => s.sandboxId));
      assert.equal(ids.size, 4, 'every fork has its own id');
      for (const fork of forks) {
        const info = await fork.getInfo();
        assert.equal(info.state, 'running');
        assert.equal(info.parentId, main.sandboxId);
        assert.equal(await fork.files.read('/root/shared.txt'), 'from the parent');
        assert.equal(await curlPage(fork), PAGE, 'the parent\'s server process runs in the fork');
      }
      await forks[0]?.files.write('/root/mine.txt', 'only in fork 0');
      for (const other of [main, forks[1] as Sandbox, forks[2] as Sandbox]) {
        assert.equal(await other.files.exists('/root/mine.txt'), false, `a write in one fork is absent in ${other.sandboxId}`);
      }
      const randoms = await Promise.all(all.map((s) => sh(s, 'head -c 32 /dev/urandom | od -An -tx1 | tr -d " \\n"')));
      assert.equal(new Set(randoms).size, all.length, `every sandbox reads different random bytes: ${randoms.join(', ')}`);
      for (const fork of forks) {
        const guest = Number((await sh(fork, 'date +%s')).trim());
        const host = Math.round(Date.now() / 1000);
        assert.ok(Math.abs(guest - host) <= 3, `fork ${fork.sandboxId} clock ${guest} vs host ${host}`);
      }
    });

    test('a fork of a fork works and carries both generations\' writes', async () => {
      const parent = forks[0];
      assert.ok(parent, 'needs the forks of the previous case');
      const [grandchild] = await parent.fork({ count: 1 });
      assert.ok(grandchild);
      assert.equal((await grandchild.getInfo()).parentId, parent.sandboxId);
      assert.equal(await grandchild.files.read('/root/shared.txt'), 'from the parent');
      assert.equal(await grandchild.files.read('/root/mine.txt'), 'only in fork 0');
      assert.equal((await sh(grandchild, 'echo grandchild')).trim(), 'grandchild');
      assert.equal(await curlPage(grandchild), PAGE);
      for (const s of [...forks, grandchild]) await s.kill();
    });

    test('a snapshot of a resumed sandbox starts new sandboxes with its files and processes', ctx.caseOptions('a snapshot of a resumed sandbox starts new sandboxes with its files and processes', { extended: true }), async () => {
      await main.pause();
      await main.resume();
      await main.files.write('/root/snap.txt', 'in the snapshot');
      const name = `rmc-snap-${Date.now()}`;
      const snapshot = await main.snapshot({ name });
      assert.equal(snapshot.name, name);
      assert.equal((await main.getInfo()).state, 'running', 'the source runs on after a snapshot');
      await main.files.write('/root/snap.txt', 'changed after the snapshot');
      const clone = await Sandbox.create({ snapshot: name, ...ctx.conn() });
      assert.equal(await clone.files.read('/root/snap.txt'), 'in the snapshot');
      assert.equal(await clone.files.read('/root/shared.txt'), 'from the parent');
      assert.equal(await curlPage(clone), PAGE);
      await clone.kill();
    });

    test('a command against a killed sandbox fails at once with SANDBOX_NOT_FOUND', async () => {
      const doomed = await ctx.create();
      await doomed.kill();
      const quick = Sandbox.fromId(doomed.sandboxId, { ...ctx.conn(), requestTimeoutMs: 15_000 });
      await rejectsWithCode(quick.commands.run('echo hi'), 'SANDBOX_NOT_FOUND');
      await rejectsWithCode(quick.commands.run('echo hi', { background: true }), 'SANDBOX_NOT_FOUND');
      await rejectsWithCode(quick.files.read('/etc/hostname'), 'SANDBOX_NOT_FOUND');
      assert.equal((await quick.getInfo()).state, 'killed');
    });
  });
}
