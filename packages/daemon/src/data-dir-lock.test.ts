/**
 * The data directory's lock (data-dir-lock.ts) in this process, no daemon: what the lock file records of
 * its holder, what `dataDirHolder` reads back without taking the lock, and the `DATA_DIR_IN_USE` error
 * naming the holder (pid, data directory, API, program) and how to stop it. With real daemons run by the
 * CLI: real-data-dir-lock.test.ts.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { realpathSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isRamifyError } from '@ramify/contracts';
import { DATA_DIR_LOCK_FILE, dataDirHolder, lockDataDir } from './data-dir-lock.js';

let dataDir = '';
before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'ramify-lock-'));
});
after(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

/** What `fn` throws. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  assert.fail('it did not throw');
}

test('the holder is recorded (pid, program, then its API URL) and named by dataDirHolder and DATA_DIR_IN_USE', async () => {
  assert.equal(dataDirHolder(dataDir), null, 'no lock file: no holder');
  const lock = lockDataDir(dataDir);
  try {
    const program = realpathSync(process.argv[1] as string);
    const starting = dataDirHolder(dataDir);
    assert.equal(starting?.pid, process.pid);
    assert.equal(starting?.program, program);
    assert.equal(starting?.url, null, 'no API URL before it listens');
    assert.equal(starting?.dataDir, dataDir);

    lock.record({ url: 'http://127.0.0.1:7499' });
    const record = JSON.parse(await readFile(join(dataDir, DATA_DIR_LOCK_FILE), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(Object.keys(record).sort(), ['pid', 'program', 'startedAt', 'url']);
    assert.equal(dataDirHolder(dataDir)?.url, 'http://127.0.0.1:7499');

    const err = thrown(() => lockDataDir(dataDir));
    assert.ok(isRamifyError(err) && err.code === 'DATA_DIR_IN_USE', String(err));
    assert.equal(err.message, `the data directory '${dataDir}' is in use by another ramify daemon (pid ${process.pid}, API http://127.0.0.1:7499, program ${program}, started ${String(record.startedAt)}). `
      + `One daemon per data directory: stop that daemon first, with kill ${process.pid} (SIGTERM: it stops cleanly; its sandboxes keep running), `
      + 'or give this one a data directory of its own (--data-dir DIR or RAMIFY_HOME, and its own --port, --network-prefix, --ingress-listen and --ssh-listen, or \'off\' for those two)');
    assert.deepEqual(err.details, { dataDir, pid: process.pid, url: 'http://127.0.0.1:7499', program, startedAt: record.startedAt });

    // An older daemon's file ({ pid, startedAt } only): the program is read from /proc/<pid>/cmdline.
    writeFileSync(join(dataDir, DATA_DIR_LOCK_FILE), `${JSON.stringify({ pid: process.pid, startedAt: record.startedAt })}\n`);
    const older = dataDirHolder(dataDir);
    assert.equal(older?.program, process.argv[1], 'the script from the command line');
    assert.equal(older?.url, null);

    // Held, nothing written yet (a daemon in its first instant): no pid to name, and the hint says where it will be.
    writeFileSync(join(dataDir, DATA_DIR_LOCK_FILE), '');
    const unnamed = thrown(() => lockDataDir(dataDir));
    assert.ok(isRamifyError(unnamed));
    assert.ok(unnamed.message.includes('in use by another ramify daemon (a process that is starting)'), unnamed.message);
    assert.ok(unnamed.message.includes(`with SIGTERM to the pid it writes in ${join(dataDir, DATA_DIR_LOCK_FILE)} as it starts`), unnamed.message);
    assert.equal((unnamed.details as { pid: unknown }).pid, null);
  } finally {
    lock.release();
  }
  assert.equal(dataDirHolder(dataDir), null, 'released: no holder, though the file stays');
  lockDataDir(dataDir).release();
});
