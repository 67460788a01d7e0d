import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ensureDirInRoot, writeFileInRoot } from './root-paths.js';

let work: string;
let root: string;
let outside: string;
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'ramify-rootpaths-test-'));
  root = join(work, 'rootfs');
  outside = join(work, 'host-outside');
  await mkdir(join(root, 'usr', 'bin'), { recursive: true });
  await mkdir(join(root, 'etc'), { recursive: true });
  await mkdir(outside);
  await symlink('usr/bin', join(root, 'bin')); // relative, like merged /usr
  await symlink(outside, join(root, 'etc', 'escape')); // absolute: must resolve inside the rootfs
  await writeFile(join(outside, 'victim'), 'host file');
  await symlink(join(outside, 'victim'), join(root, 'etc', 'link-to-host'));
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('writing inside a root filesystem', () => {
  it('follows relative symlinks inside the rootfs', async () => {
    await writeFileInRoot(root, '/bin/tool', '#!/bin/sh\n', 0o755);
    assert.equal(await readFile(join(root, 'usr', 'bin', 'tool'), 'utf8'), '#!/bin/sh\n');
    assert.equal((await stat(join(root, 'usr', 'bin', 'tool'))).mode & 0o7777, 0o755);
  });

  it('re-roots absolute symlinks instead of writing to the host', async () => {
    await writeFileInRoot(root, '/etc/escape/file', 'inside', 0o644);
    assert.equal(await readFile(join(root, outside, 'file'), 'utf8'), 'inside');
    await assert.rejects(stat(join(outside, 'file')), /ENOENT/);
  });

  it('replaces a symlink at the target path instead of writing through it', async () => {
    await writeFileInRoot(root, '/etc/link-to-host', 'replaced', 0o600);
    assert.equal(await readFile(join(outside, 'victim'), 'utf8'), 'host file');
    const info = await lstat(join(root, 'etc', 'link-to-host'));
    assert.ok(info.isFile());
    assert.equal(info.mode & 0o7777, 0o600);
  });

  it('creates missing parents and applies exact modes despite the umask', async () => {
    const dir = await ensureDirInRoot(root, '/run/ramify');
    assert.equal(dir, join(root, 'run', 'ramify'));
    await writeFileInRoot(root, '/opt/x/y/z.txt', 'z', 0o640);
    assert.equal((await stat(join(root, 'opt', 'x', 'y', 'z.txt'))).mode & 0o7777, 0o640);
    assert.equal(await readlink(join(root, 'bin')), 'usr/bin');
  });

  it('rejects writing over a directory or through a file', async () => {
    await assert.rejects(writeFileInRoot(root, '/etc', 'x', 0o644), /is a directory/);
    await writeFileInRoot(root, '/etc/plain', 'x', 0o644);
    await assert.rejects(writeFileInRoot(root, '/etc/plain/child', 'x', 0o644), /is not a directory/);
  });
});
