import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { NEXT_START_DELAY_MS, StandbyProcess } from './standby-process.js';

const waitingCats = (): number => spawnSync('pgrep', ['-P', String(process.pid), '-x', 'cat']).stdout.toString().trim().split('\n').filter(Boolean).length;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

test('each run gets its input on stdin and its own output and exit code; the next one is started behind it', async () => {
  const standby = new StandbyProcess(['sh', '-c', 'read line; echo "got $line"; [ "$line" = ok ]']);
  try {
    assert.deepEqual(await standby.run('ok\n'), { stdout: 'got ok\n', stderr: '', code: 0 });
    // Started ahead by the first run: still answers for itself.
    assert.deepEqual(await standby.run('no\n'), { stdout: 'got no\n', stderr: '', code: 1 });
    assert.equal((await standby.run('ok\n')).code, 0);
  } finally {
    standby.stop();
  }
});

test('the next child starts only once the program was idle a while, not inside the run that used the last one', async () => {
  const standby = new StandbyProcess(['cat']);
  try {
    await standby.run('first');
    assert.equal(waitingCats(), 0, 'nothing started by the run itself');
    await sleep(NEXT_START_DELAY_MS + 200);
    assert.equal(waitingCats(), 1, 'one child waits after the delay');
    assert.deepEqual(await standby.run('second'), { stdout: 'second', stderr: '', code: 0 });
    assert.equal(waitingCats(), 0, 'the waiting one was used');
  } finally {
    standby.stop();
  }
  await sleep(100);
  assert.equal(waitingCats(), 0, 'stop ends the waiting child and starts none');
});

test('a standby killed while it waited is replaced by a fresh process for that run', async () => {
  const standby = new StandbyProcess(['cat']);
  try {
    await standby.run('first');
    await sleep(NEXT_START_DELAY_MS + 200);
    // The child started behind the first run: kill it before it is used.
    const killed = spawnSync('pkill', ['-KILL', '-P', String(process.pid), '-x', 'cat']);
    assert.equal(killed.status, 0, 'the waiting cat was found and killed');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(await standby.run('second'), { stdout: 'second', stderr: '', code: 0 });
  } finally {
    standby.stop();
  }
});

test('a program that cannot start rejects RUNTIME_UNAVAILABLE', async () => {
  const standby = new StandbyProcess(['/nonexistent/program']);
  await assert.rejects(standby.run(''), (err: { code?: string }) => err.code === 'RUNTIME_UNAVAILABLE');
  await assert.rejects(standby.run(''), (err: { code?: string }) => err.code === 'RUNTIME_UNAVAILABLE');
  standby.stop();
});

test('prepare starts a child ahead of the first run, once', async () => {
  const standby = new StandbyProcess(['cat']);
  try {
    assert.equal(waitingCats(), 0, 'nothing started by the constructor');
    standby.prepare();
    standby.prepare();
    await sleep(NEXT_START_DELAY_MS + 200);
    assert.equal(waitingCats(), 1, 'one child waits before any run');
    assert.deepEqual(await standby.run('first'), { stdout: 'first', stderr: '', code: 0 });
    assert.equal(waitingCats(), 0, 'the first run used it');
  } finally {
    standby.stop();
  }
});
