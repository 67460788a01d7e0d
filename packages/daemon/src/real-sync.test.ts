/**
 * Two-way sync end to end through a REAL daemon (gVisor, the real agent, its watch and GNU tar in the
 * base rootfs), with the SDK's `syncDir` and the built CLI: edits, deletions, binary bytes, modes and
 * symlinks carried both ways; a 5,000-file tree; a conflict keeping both versions; a pause in the middle
 * of a sync losing nothing; bad targets refused with nothing changed. Waits are bounded (`until`),
 * never timed. Skipped, with the reason, when not root, without runsc, or without the rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, open, readFile, readlink, rm, stat, symlink, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sandbox, syncDir, type SyncChange, type SyncSession } from '@ramify/sdk';
import { openRealDaemon, realRuntimeSkip, until, type RealDaemon } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc']);
const sha = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

/** Run the built CLI against `conn` (asynchronously: the daemon answers from this very process). */
function runCli(args: string[], conn: { apiUrl: string; apiKey: string }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(import.meta.dirname, '../../cli/dist/main.js'), ...args], {
    env: { ...process.env, RAMIFY_API_URL: conn.apiUrl, RAMIFY_API_KEY: conn.apiKey }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
}

describe('two-way sync through a real daemon (gVisor)', { skip, timeout: 900_000 }, () => {
  let daemon: RealDaemon;
  let sbx: Sandbox;
  let work: string;
  before(async () => {
    daemon = await openRealDaemon({ runtime: 'gvisor', prefix: 'rwsy', rootfs: rootfs as string, templateId: 'tpl_sync' });
    sbx = await Sandbox.create({ template: 'tpl_sync', ...daemon.conn });
    work = await mkdtemp(join(tmpdir(), 'ramify-sync-e2e-'));
  });
  after(async () => {
    await daemon?.close();
    await rm(work, { recursive: true, force: true });
  });

  const run = async (cmd: string): Promise<string> => (await sbx.commands.run(cmd)).stdout;
  const remoteText = (path: string): Promise<string | undefined> => sbx.files.read(path).catch(() => undefined);
  const localText = (path: string): Promise<string | undefined> => readFile(path, 'utf8').catch(() => undefined);

  test('edits, deletions, binary bytes, modes and symlinks go both ways while it runs', async () => {
    const local = join(work, 'live');
    await mkdir(join(local, 'src'), { recursive: true });
    await writeFile(join(local, 'src/main.py'), 'print(1)\n');
    await run('mkdir -p /root/live && echo from-sandbox > /root/live/remote.txt');
    const changes: SyncChange[] = [];
    const session = await syncDir(sbx, local, '/root/live', { onChange: (c) => changes.push(c) });
    try {
      await session.ready;
      assert.equal(await remoteText('/root/live/src/main.py'), 'print(1)\n');
      assert.equal(await localText(join(local, 'remote.txt')), 'from-sandbox\n');

      await writeFile(join(local, 'src/main.py'), 'print(2)\n');
      await until(async () => (await remoteText('/root/live/src/main.py')) === 'print(2)\n', 'a local edit reached the sandbox');
      await run('echo edited-in-sandbox > /root/live/remote.txt');
      await until(async () => (await localText(join(local, 'remote.txt'))) === 'edited-in-sandbox\n', 'a sandbox edit reached the host');

      const bytes = randomBytes(300_000);
      await writeFile(join(local, 'blob.bin'), bytes);
      await until(async () => (await run('sha256sum /root/live/blob.bin 2>/dev/null || true')).startsWith(sha(bytes)), 'binary bytes arrived exact');
      await writeFile(join(local, 'run.sh'), '#!/bin/sh\necho ok\n');
      await chmod(join(local, 'run.sh'), 0o750);
      await symlink('src/main.py', join(local, 'main-link'));
      await until(async () => (await run('stat -c %a /root/live/run.sh 2>/dev/null; readlink /root/live/main-link || true')) === '750\nsrc/main.py\n', 'mode and symlink carried to the sandbox');
      await run('head -c 70000 /dev/urandom > /root/live/out.bin && chmod 604 /root/live/out.bin && ln -s out.bin /root/live/out-link');
      await until(async () => (await readlink(join(local, 'out-link')).catch(() => '')) === 'out.bin', 'a sandbox symlink reached the host');
      await until(async () => (await stat(join(local, 'out.bin')).catch(() => undefined))?.mode === 0o100604, 'a sandbox file and its mode reached the host');
      assert.equal(sha(await readFile(join(local, 'out.bin'))), (await run('sha256sum /root/live/out.bin')).split(' ')[0]);

      await unlink(join(local, 'blob.bin'));
      await until(async () => (await run('ls /root/live')).split('\n').includes('blob.bin') === false, 'a local deletion reached the sandbox');
      await run('rm /root/live/remote.txt');
      await until(async () => (await localText(join(local, 'remote.txt'))) === undefined, 'a sandbox deletion reached the host');
      assert.equal(changes.filter((c) => c.kind === 'conflict').length, 0);
    } finally {
      await session.stop();
    }
  });

  test('a 5,000-file tree reconciles (both directions), and a restarted sync copies only what changed', async () => {
    const local = join(work, 'big');
    for (let d = 0; d < 50; d++) {
      await mkdir(join(local, `d${d}`), { recursive: true });
      await Promise.all(Array.from({ length: 100 }, (_, f) => writeFile(join(local, `d${d}`, `f${f}.txt`), `file ${d}/${f}\n`)));
    }
    let pushed = 0;
    const t0 = Date.now();
    await (await syncDir(sbx, local, '/root/big', { once: true, onChange: (c) => void (c.kind === 'pushed' && pushed++) })).done;
    const seconds = (Date.now() - t0) / 1000;
    assert.equal(pushed, 5050); // 5,000 files and 50 directories
    const digest = "cd /root/big && find . -path ./.ramify -prune -o -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1";
    const localDigest = spawnSync('sh', ['-c', digest.replace('/root/big', local)], { encoding: 'utf8' }).stdout;
    assert.equal(await run(digest), localDigest);
    process.stdout.write(`# 5,000 files reconciled in ${seconds.toFixed(1)} s\n`);

    await run('echo changed > /root/big/d7/f7.txt');
    await writeFile(join(local, 'd8/f8.txt'), 'changed here\n');
    const second: SyncChange[] = [];
    await (await syncDir(sbx, local, '/root/big', { once: true, onChange: (c) => second.push(c) })).done;
    assert.deepEqual(second.map((c) => `${c.kind} ${c.path}`).sort(), ['pulled d7/f7.txt', 'pushed d8/f8.txt']);
  });

  test('a conflict keeps both versions: the local one under the name, the sandbox one as NAME.conflict', async () => {
    const local = join(work, 'conflict');
    await mkdir(local, { recursive: true });
    await writeFile(join(local, 'notes.txt'), 'base\n');
    await (await syncDir(sbx, local, '/root/conflict', { once: true })).done;
    await writeFile(join(local, 'notes.txt'), 'local edit\n');
    await run('echo sandbox edit > /root/conflict/notes.txt');
    const changes: SyncChange[] = [];
    await (await syncDir(sbx, local, '/root/conflict', { once: true, onChange: (c) => changes.push(c) })).done;
    assert.deepEqual(changes.filter((c) => c.kind === 'conflict'), [{ kind: 'conflict', path: 'notes.txt', copy: 'notes.txt.conflict' }]);
    assert.equal(await localText(join(local, 'notes.txt')), 'local edit\n');
    assert.equal(await localText(join(local, 'notes.txt.conflict')), 'sandbox edit\n');
    assert.equal(await remoteText('/root/conflict/notes.txt'), 'local edit\n');
    assert.equal(await remoteText('/root/conflict/notes.txt.conflict'), 'sandbox edit\n');
  });

  test('the sandbox paused in the middle of a sync: nothing is lost, it goes on after the resume', async () => {
    const local = join(work, 'paused');
    await mkdir(local, { recursive: true });
    let pausing: Promise<unknown> | undefined;
    let writing = false;
    const failures: string[] = [];
    const session: SyncSession = await syncDir(sbx, local, '/root/paused', {
      // The pause is asked for as the first pass after the writes began starts its upload: it lands in
      // the middle of it. (The 300 files may come in more than one pass, so no size is required.)
      onProgress: (p) => {
        if (writing && p.phase === 'upload' && p.done === 0 && !pausing) pausing = sbx.pause();
      },
      onError: (err) => void failures.push(err.message),
    });
    try {
      await session.ready;
      const files = Array.from({ length: 300 }, (_, i) => [`batch/f${i}.bin`, randomBytes(4096)] as const);
      writing = true;
      await mkdir(join(local, 'batch'));
      await Promise.all(files.map(([name, data]) => writeFile(join(local, name), data)));
      await until(async () => pausing !== undefined, 'the upload started');
      await pausing;
      assert.equal((await sbx.getInfo()).state, 'paused');
      await writeFile(join(local, 'during-pause.txt'), 'written while paused\n');
      await sbx.resume();
      await run('echo after-resume > /root/paused/sandbox-side.txt');
      await until(async () => (await localText(join(local, 'sandbox-side.txt'))) === 'after-resume\n', 'a sandbox change after the resume reached the host');
      await until(async () => (await remoteText('/root/paused/during-pause.txt')) === 'written while paused\n', 'a change made during the pause reached the sandbox');
      await until(async () => (await run('ls /root/paused/batch | wc -l')).trim() === '300', 'all 300 files reached the sandbox', 120_000);
      const remoteSums = await run('cd /root/paused && sha256sum batch/*');
      for (const [name, data] of files) assert.ok(remoteSums.includes(`${sha(data)}  ${name}`), name);
      assert.deepEqual(failures, [], 'a pause is waited for, not reported as a failure');
    } finally {
      await session.stop();
    }
  });

  test('bad targets: a sandbox path that is a file, a local path that is a file: refused, nothing changed', async () => {
    await run('echo keep > /root/a-file');
    await mkdir(join(work, 'bad'), { recursive: true });
    await writeFile(join(work, 'bad/x.txt'), 'x\n');
    await assert.rejects(syncDir(sbx, join(work, 'bad'), '/root/a-file', { once: true }), { code: 'NOT_A_DIRECTORY' });
    assert.equal(await remoteText('/root/a-file'), 'keep\n');
    await assert.rejects(syncDir(sbx, join(work, 'bad/x.txt'), '/root/elsewhere', { once: true }), { code: 'NOT_A_DIRECTORY' });
    assert.equal(await localText(join(work, 'bad/x.txt')), 'x\n');
    // The CLI says the same, with exit 1.
    const cli = await runCli(['sandbox', 'sync', join(work, 'bad'), `${sbx.sandboxId}:/root/a-file`, '--once'], daemon.conn);
    assert.equal(cli.status, 1, cli.stderr);
    assert.match(cli.stderr, /not a directory/);
    // A target that is not <id>:<absolute dir> is a usage error (exit 2), before anything is read.
    for (const target of [sbx.sandboxId, `${sbx.sandboxId}:relative`]) {
      const usage = await runCli(['sandbox', 'sync', join(work, 'bad'), target, '--once'], daemon.conn);
      assert.equal(usage.status, 2, `${target}: ${usage.stderr}`);
      assert.match(usage.stderr, /expected <id>:<absolute remote dir>/);
    }
  });

  test('a local file still growing while it is synced: the session goes on and ends with its final bytes', async () => {
    const local = join(work, 'growing');
    await mkdir(local, { recursive: true });
    const failures: string[] = [];
    const session = await syncDir(sbx, local, '/root/growing', { onError: (err) => void failures.push(err.message) });
    try {
      await session.ready;
      // 30 pieces of 200 KiB, 50 ms apart: passes read the file (streamed once it is over 1 MiB) while it grows.
      const pieces = Array.from({ length: 30 }, () => randomBytes(200 << 10));
      const handle = await open(join(local, 'grow.bin'), 'w');
      for (const piece of pieces) {
        await handle.write(piece);
        await new Promise((r) => setTimeout(r, 50));
      }
      await handle.close();
      const want = sha(Buffer.concat(pieces));
      await until(async () => (await run('sha256sum /root/growing/grow.bin 2>/dev/null || true')).startsWith(want), 'the final bytes reached the sandbox', 60_000);
      assert.deepEqual(failures, []);
    } finally {
      await session.stop();
    }
  });

  test('the CLI refuses to start on a paused sandbox unless --resume, which resumes it', async () => {
    const local = join(work, 'resume');
    await mkdir(local, { recursive: true });
    await writeFile(join(local, 'r.txt'), 'r\n');
    await sbx.pause();
    const refused = await runCli(['sandbox', 'sync', local, `${sbx.sandboxId}:/root/resume`, '--once'], daemon.conn);
    assert.equal(refused.status, 1, refused.stderr);
    assert.match(refused.stderr, /paused.*--resume/);
    assert.equal((await sbx.getInfo()).state, 'paused');
    const resumed = await runCli(['sandbox', 'sync', local, `${sbx.sandboxId}:/root/resume`, '--once', '--resume'], daemon.conn);
    assert.equal(resumed.status, 0, resumed.stderr);
    assert.equal(await remoteText('/root/resume/r.txt'), 'r\n');
  });

  test('the CLI: --once with --ignore and .ramifyignore, one JSON line per change', async () => {
    const local = join(work, 'cli');
    await mkdir(join(local, 'dist'), { recursive: true });
    await writeFile(join(local, 'keep.txt'), 'k\n');
    await writeFile(join(local, 'dist/skip.js'), 's\n');
    await writeFile(join(local, 'debug.log'), 'l\n');
    await writeFile(join(local, '.ramifyignore'), '*.log\n');
    const cli = await runCli(['--json', 'sandbox', 'sync', local, `${sbx.sandboxId}:/root/cli`, '--once', '--ignore', 'dist/'], daemon.conn);
    assert.equal(cli.status, 0, cli.stderr);
    const lines = cli.stdout.trim().split('\n').map((l) => JSON.parse(l) as { event: string; kind?: string; path?: string });
    assert.deepEqual(lines.filter((l) => l.event === 'change').map((l) => l.path).sort(), ['.ramifyignore', 'keep.txt']);
    assert.equal(lines.at(-1)?.event, 'synced');
    assert.equal((await run('ls -A /root/cli')).trim(), '.ramifyignore\nkeep.txt');
  });
});
