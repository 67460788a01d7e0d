import { isRamifyError } from '@ramify/contracts';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LineSplitter } from './lines.js';
import { runTool } from './run-tool.js';
import { compileStatxFix, statxFixSourceSha256 } from './statx-fix.js';

const hasCc = spawnSync('cc', ['--version']).status === 0;

let work: string;
before(async () => {
  work = await mkdtemp(join(tmpdir(), 'ramify-statx-test-'));
});
after(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('statx shim', { skip: hasCc ? false : 'no C compiler (cc) on this host' }, () => {
  it('compiles, exports statx, needs only syscall from libc, and works preloaded', async () => {
    const lib = join(work, 'statx-fix.so');
    await compileStatxFix(lib);
    const defined = execFileSync('nm', ['-D', '--defined-only', lib], { encoding: 'utf8' });
    assert.match(defined, /\bT statx$/m);
    const undefinedSymbols = execFileSync('nm', ['-D', '--undefined-only', lib], { encoding: 'utf8' });
    // Strong undefined symbols only (weak ones such as __cxa_finalize may be absent at run time).
    const needed = undefinedSymbols.split('\n').map((line) => line.trim().split(/\s+/)).filter(([kind]) => kind === 'U').map(([, name]) => name);
    assert.deepEqual(needed.map((name) => name.replace(/@.*/, '')), ['syscall']);
    const out = execFileSync('stat', ['-c', '%n %F', '/'], { encoding: 'utf8', env: { ...process.env, LD_PRELOAD: lib } });
    assert.equal(out.trim(), '/ directory');
    assert.match(await statxFixSourceSha256(), /^[0-9a-f]{64}$/);
  });
});

describe('runTool', () => {
  it('streams lines and reports a failing tool with its output tail', async () => {
    const lines: string[] = [];
    await assert.rejects(runTool(['sh', '-c', 'echo one; echo two >&2; exit 3'], { step: 'demo', onLine: (line) => lines.push(line) }), (error) => {
      assert.ok(isRamifyError(error));
      assert.equal(error.code, 'TEMPLATE_BUILD_FAILED');
      assert.match(error.message, /^demo: sh exited with code 3:\n/);
      assert.match(error.message, /two/);
      return true;
    });
    assert.deepEqual(lines.sort(), ['one', 'two']);
  });

  it('names the Debian package of a missing tool', async () => {
    await assert.rejects(runTool(['/nonexistent/mmdebstrap'], { step: 'rootfs', debianPackage: 'mmdebstrap' }), /rootfs: cannot run \/nonexistent\/mmdebstrap: .*install the Debian package mmdebstrap/);
  });

  it('stops the tool when aborted and waits for it to exit', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    await assert.rejects(runTool(['sleep', '30'], { step: 'rootfs', signal: controller.signal }), /rootfs: cancelled/);
  });
});

describe('LineSplitter', () => {
  it('splits on \\n, \\r\\n and \\r, across chunks and inside multi-byte characters', () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((line) => lines.push(line));
    const bytes = Buffer.from('a\r\nb\rprogress 50%\rprogress 100%\nüber', 'utf8');
    for (const byte of bytes) splitter.push(Uint8Array.of(byte));
    splitter.end();
    assert.deepEqual(lines, ['a', 'b', 'progress 50%', 'progress 100%', 'über']);
  });
});
