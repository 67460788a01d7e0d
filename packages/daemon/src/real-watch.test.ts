/**
 * Watching a directory end to end through a REAL daemon (gVisor, the real agent and `inotifywait` from
 * the base rootfs), driven with the SDK's `files.watchDir`: create/write/rename/remove in the kernel's
 * order, subdirectories, chmod, events made while the sandbox was paused and resumed, stop, and typed
 * errors for bad input. On a QEMU microVM (`npm run test:full`) the order and a pause/resume once more.
 * Skipped, with the reason, when not root, without the runtime's tools, or without the rootfs.
 */
import { after, before, describe, test } from 'node:test';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import type { RuntimeName } from '@ramify/contracts';
import { Sandbox, type FilesystemEvent, type WatchHandle } from '@ramify/sdk';
import { openRealDaemon, realRuntimeSkip, until, type RealDaemon } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc']);

let daemon: RealDaemon | undefined;
const conn = (): RealDaemon['conn'] => daemon!.conn;

async function openDaemon(runtime: RuntimeName): Promise<Sandbox> {
  daemon = await openRealDaemon({ runtime, prefix: 'rwsy', rootfs: rootfs as string, templateId: 'tpl_watch' });
  return Sandbox.create({ template: 'tpl_watch', ...conn() });
}

async function closeDaemon(): Promise<void> {
  await daemon?.close();
  daemon = undefined;
}

/** Events as `type name[/]` lines, collected from a watch. */
class Events {
  readonly all: FilesystemEvent[] = [];
  readonly onEvent = (e: FilesystemEvent): void => void this.all.push(e);
  lines(filter: (e: FilesystemEvent) => boolean = () => true): string[] {
    return this.all.filter(filter).map((e) => `${e.type} ${e.name}${e.isDir ? '/' : ''}`);
  }
  async waitFor(line: string): Promise<void> {
    await until(async () => this.lines().includes(line), `the watch reported '${line}'; got ${JSON.stringify(this.lines().slice(-20))}`);
  }
}

async function sh(sbx: Sandbox, cmd: string): Promise<void> {
  await sbx.commands.run(cmd);
}

/** create/write/rename/remove of one file, in one command: all of them, in the kernel's order. */
async function checkOrder(sbx: Sandbox, dir: string): Promise<void> {
  await sh(sbx, `mkdir -p ${dir}`);
  const events = new Events();
  const handle = await sbx.files.watchDir(dir, events.onEvent);
  await sh(sbx, `cd ${dir} && echo one > f && echo two >> f && mv f g && rm g`);
  await events.waitFor('remove g');
  // The kernel merges an event into an identical one still unread (inotify(7)): two writes may be one.
  const merged = events.lines().filter((line, i, all) => line !== all[i - 1]);
  assert.deepEqual(merged, ['create f', 'write f', 'rename f', 'create g', 'remove g']);
  assert.equal(events.all[0]?.path, `${dir}/f`);
  await handle.stop();
}

describe('watching files through a real daemon (gVisor)', { skip, timeout: 600_000 }, () => {
  let sbx: Sandbox;
  before(async () => {
    sbx = await openDaemon('gvisor');
  });
  after(closeDaemon);

  test('create, write, rename and remove arrive in the order the kernel saw them', async () => {
    await checkOrder(sbx, '/root/order');
  });

  test('recursive: a new subdirectory and a file in it, chmod; without recursive, only direct entries', async () => {
    await sh(sbx, 'mkdir -p /root/rec /root/flat/deep');
    const rec = new Events();
    const flat = new Events();
    const h1 = await sbx.files.watchDir('/root/rec', rec.onEvent, { recursive: true });
    const h2 = await sbx.files.watchDir('/root/flat', flat.onEvent);
    await sh(sbx, 'mkdir /root/rec/sub');
    await rec.waitFor('create sub/');
    await sh(sbx, 'echo x > /root/rec/sub/h && chmod 600 /root/rec/sub/h');
    await rec.waitFor('chmod sub/h');
    assert.deepEqual(rec.lines(), ['create sub/', 'create sub/h', 'write sub/h', 'chmod sub/h']);
    await sh(sbx, 'echo y > /root/flat/deep/no && echo z > /root/flat/yes');
    await flat.waitFor('write yes');
    assert.deepEqual(flat.lines(), ['create yes', 'write yes']);
    await h1.stop();
    await h2.stop();
  });

  test('across pause/resume: changes made after the resume arrive, before the handle re-attached too, nothing missed', async () => {
    await sh(sbx, 'mkdir -p /root/paused');
    const events = new Events();
    let exited = false;
    const handle: WatchHandle = await sbx.files.watchDir('/root/paused', events.onEvent, { onExit: () => void (exited = true) });
    await sh(sbx, 'echo 1 > /root/paused/before');
    await events.waitFor('write before');
    await sbx.pause();
    await sbx.resume();
    // Right after the resume the handle is still waiting to re-attach: the agent holds these for it.
    await sh(sbx, 'echo 2 > /root/paused/after && mv /root/paused/after /root/paused/after2');
    await events.waitFor('create after2');
    for (let cycle = 0; cycle < 2; cycle++) {
      await sbx.pause();
      await sbx.resume();
      await sh(sbx, `echo ${cycle} > /root/paused/cycle${cycle}`);
      await events.waitFor(`write cycle${cycle}`);
    }
    assert.deepEqual(events.lines(), ['create before', 'write before', 'create after', 'write after', 'rename after', 'create after2', 'create cycle0', 'write cycle0', 'create cycle1', 'write cycle1']);
    assert.equal(handle.overflows, 0);
    assert.equal(exited, false);
    await handle.stop();
    assert.equal(exited, true);
  });

  test('the watched directory removed ends the watch with an error; stop() ends it without one', async () => {
    await sh(sbx, 'mkdir -p /root/gone');
    let exit: Error | undefined | 'not yet' = 'not yet';
    await sbx.files.watchDir('/root/gone', () => undefined, { onExit: (err) => void (exit = err) });
    await sh(sbx, 'rm -r /root/gone');
    await until(async () => exit !== 'not yet', 'the watch ended');
    assert.match(String(exit), /removed/);
  });

  test('the CLI: `files watch` prints one line per event and ends cleanly on Ctrl-C', async () => {
    await sh(sbx, 'mkdir -p /root/cli-watch');
    const child = spawn(process.execPath, [join(import.meta.dirname, '../../cli/dist/main.js'), 'sandbox', 'files', 'watch', sbx.sandboxId, '/root/cli-watch', '-r'], {
      env: { ...process.env, RAMIFY_API_URL: conn().apiUrl, RAMIFY_API_KEY: conn().apiKey }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    // The watch is in place once a change made now is reported; make one until it is.
    await until(async () => {
      await sh(sbx, 'echo x >> /root/cli-watch/probe');
      return out.includes('write probe');
    }, 'the CLI printed a write');
    child.kill('SIGINT');
    assert.equal(await exited, 0);
  });

  test('bad input: a missing path, a file, a stopped watch: typed errors', async () => {
    await assert.rejects(sbx.files.watchDir('/root/no-such-dir', () => undefined), { code: 'FILE_NOT_FOUND' });
    await sh(sbx, 'echo x > /root/a-file');
    await assert.rejects(sbx.files.watchDir('/root/a-file', () => undefined), { code: 'NOT_A_DIRECTORY' });
    await sh(sbx, 'mkdir -p /root/stopme');
    const handle = await sbx.files.watchDir('/root/stopme', () => undefined);
    await handle.stop();
    const again = await daemon!.call('DELETE', `/v1/sandboxes/${sbx.sandboxId}/files/watch/${handle.watchId}`);
    assert.deepEqual([again.status, again.json.error.code], [404, 'WATCH_NOT_FOUND']);
    const killed = await Sandbox.create({ template: 'tpl_watch', ...conn() });
    await killed.kill();
    await assert.rejects(killed.files.watchDir('/root', () => undefined), { code: 'SANDBOX_NOT_FOUND' });
  });
});

const microvmSkip = process.env.RAMIFY_TEST_FULL === '1' ? realRuntimeSkip(rootfs, ['qemu-system-x86_64', 'qemu-img']) : 'long (a microVM under TCG): runs in npm run test:full (RAMIFY_TEST_FULL=1)';

describe('watching files through a real daemon (QEMU microVM)', { skip: microvmSkip, timeout: 900_000 }, () => {
  let sbx: Sandbox;
  before(async () => {
    sbx = await openDaemon('microvm');
  });
  after(closeDaemon);

  test('the kernel order of create/write/rename/remove, and events after a pause/resume', async () => {
    await checkOrder(sbx, '/root/order');
    const events = new Events();
    const handle = await sbx.files.watchDir('/root/order', events.onEvent);
    await sbx.pause();
    await sbx.resume();
    await sh(sbx, 'echo after > /root/order/after');
    await events.waitFor('write after');
    assert.equal(handle.overflows, 0);
    await handle.stop();
  });
});
