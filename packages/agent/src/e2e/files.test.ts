/** End-to-end file operations through a real bridge. */
import assert from 'node:assert/strict';
import { createHash, randomFillSync } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { after, before, test } from 'node:test';
import type { AgentClient } from '../client/agent-client.js';
import { startAgent, type AgentFixture } from '../test-support/agent-harness.js';

/** A safety bound so a broken agent fails the test instead of hanging the run. */
const LIMIT = { timeout: 120_000 };

let agent: AgentFixture;
let client: AgentClient;

before(async () => {
  agent = await startAgent();
  ({ client } = await agent.connect());
});

after(async () => {
  await agent.stop();
});

async function readAll(path: string): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const chunk of client.readFile(path)) parts.push(Buffer.from(chunk));
  return Buffer.concat(parts);
}

async function* once(data: Uint8Array): AsyncIterable<Uint8Array> {
  yield data;
}

/** Peak resident set (VmHWM) of a process, in bytes. */
function peakRss(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

test('empty files write and read back as empty', LIMIT, async () => {
  const path = join(agent.dir, 'empty');
  const info = await client.writeFile(path, once(new Uint8Array(0)));
  assert.equal(info.size, 0);
  assert.equal(info.type, 'file');
  assert.equal((await readAll(path)).length, 0);
  writeFileSync(join(agent.dir, 'empty2'), '');
  assert.equal((await readAll(join(agent.dir, 'empty2'))).length, 0);
});

test('a 200 MB file round trip is exact and streamed (memory stays well below the file size)', LIMIT, async (t) => {
  const size = 200 * 1024 * 1024;
  const src = join(agent.dir, 'src.bin');
  const hashIn = createHash('sha256');
  const out = createWriteStream(src);
  const block = Buffer.alloc(1024 * 1024);
  for (let written = 0; written < size; written += block.length) {
    randomFillSync(block);
    hashIn.update(block);
    if (!out.write(block)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  out.end();
  await finished(out);
  const expected = hashIn.digest('hex');

  let maxRss = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    maxRss = Math.max(maxRss, process.memoryUsage().rss);
  }, 25);
  try {
    const dest = join(agent.dir, 'sub dir', 'copy.bin');
    const info = await client.writeFile(dest, createReadStream(src, { highWaterMark: 256 * 1024 }), { mode: 0o600 });
    assert.equal(info.size, size);
    assert.equal(info.mode, 0o600);
    assert.equal(statSync(dest).mode & 0o777, 0o600);

    const hashOut = createHash('sha256');
    let received = 0;
    for await (const chunk of client.readFile(dest)) {
      hashOut.update(chunk);
      received += chunk.byteLength;
    }
    assert.equal(received, size);
    assert.equal(hashOut.digest('hex'), expected);
  } finally {
    clearInterval(sampler);
  }
  const limit = 150 * 1024 * 1024;
  assert.ok(maxRss < limit, `test process RSS peaked at ${maxRss} bytes`);
  const agentPeak = peakRss(agent.server.pid as number);
  t.diagnostic(`peak RSS: test process ${maxRss} bytes, agent ${agentPeak} bytes`);
  assert.ok(agentPeak < limit, `agent RSS peaked at ${agentPeak} bytes`);
});

test('names with spaces and non-ASCII characters', LIMIT, async () => {
  const dir = join(agent.dir, 'dössier with spaces', 'ünïcödé €');
  const path = join(dir, 'naïve file 名前.txt');
  const text = 'grüße, 世界 🌍\n';
  await client.writeFile(path, once(Buffer.from(text)));
  assert.equal(readFileSync(path, 'utf8'), text);
  assert.equal((await readAll(path)).toString(), text);
  const listing = await client.listDir(join(agent.dir, 'dössier with spaces'), 2);
  assert.deepEqual(listing.map((f) => [f.name, f.type]), [
    ['ünïcödé €', 'dir'],
    ['naïve file 名前.txt', 'file'],
  ]);
  assert.equal((await client.stat(path)).size, Buffer.byteLength(text));
});

test('list depth, stat, mkdir -p, rename, remove', LIMIT, async () => {
  const root = join(agent.dir, 'tree');
  const made = await client.mkdir(join(root, 'a', 'b', 'c'));
  assert.equal(made.type, 'dir');
  await assert.rejects(client.mkdir(join(root, 'a')), { code: 'FILE_EXISTS' }); // exists already: E2B's makeDir answers false
  writeFileSync(join(root, 'a', 'f1'), 'x');
  writeFileSync(join(root, 'a', 'b', 'f2'), 'yy');
  assert.deepEqual((await client.listDir(root)).map((f) => f.path), [join(root, 'a')]);
  assert.deepEqual((await client.listDir(root, 2)).map((f) => f.path), [join(root, 'a'), join(root, 'a', 'b'), join(root, 'a', 'f1')]);
  assert.equal((await client.listDir(root, 4)).length, 5);

  const moved = await client.rename(join(root, 'a', 'f1'), join(root, 'new parent', 'f1 moved'));
  assert.equal(moved.size, 1);
  assert.equal(moved.name, 'f1 moved');
  await assert.rejects(client.stat(join(root, 'a', 'f1')), { code: 'FILE_NOT_FOUND' });

  await client.remove(join(root, 'a'));
  await assert.rejects(client.stat(join(root, 'a', 'b', 'f2')), { code: 'FILE_NOT_FOUND' });
  await assert.rejects(client.remove(join(root, 'a')), { code: 'FILE_NOT_FOUND' });
});

test('errors carry stable codes and name the path', LIMIT, async () => {
  const missing = join(agent.dir, 'missing file');
  const expectCode = async (p: Promise<unknown>, code: string, path: string): Promise<void> => {
    await assert.rejects(p, (err: Error & { code?: string }) => {
      assert.equal(err.code, code);
      assert.ok(err.message.includes(path), `${err.message} names ${path}`);
      return true;
    });
  };
  await expectCode(readAll(missing), 'FILE_NOT_FOUND', missing);
  await expectCode(readAll(agent.dir), 'IS_A_DIRECTORY', agent.dir);
  await expectCode(client.stat(missing), 'FILE_NOT_FOUND', missing);
  const file = join(agent.dir, 'plain');
  writeFileSync(file, 'p');
  await expectCode(client.listDir(file), 'NOT_A_DIRECTORY', file);
  await expectCode(client.stat(join(file, 'child')), 'NOT_A_DIRECTORY', join(file, 'child'));
  await expectCode(client.writeFile(agent.dir, once(Buffer.from('x'))), 'IS_A_DIRECTORY', agent.dir);
  await expectCode(client.writeFile(join(file, 'under', 'x'), once(Buffer.from('x'))), 'NOT_A_DIRECTORY', file);
  await expectCode(client.mkdir(join(file, 'sub')), 'NOT_A_DIRECTORY', join(file, 'sub'));
});

test('an upload whose source fails leaves the old file untouched and no temp file behind', LIMIT, async () => {
  const dir = join(agent.dir, 'atomic');
  mkdirSync(dir);
  const path = join(dir, 'keep.txt');
  writeFileSync(path, 'original');
  async function* failing(): AsyncIterable<Uint8Array> {
    yield Buffer.alloc(300_000, 1);
    throw new Error('source broke');
  }
  await assert.rejects(client.writeFile(path, failing()), /source broke/);
  assert.equal(readFileSync(path, 'utf8'), 'original');
  assert.deepEqual((await client.listDir(dir)).map((f) => f.name), ['keep.txt']);

  await client.writeFile(path, once(Buffer.from('replaced')));
  assert.equal(readFileSync(path, 'utf8'), 'replaced');
  assert.equal(statSync(path).mode & 0o777, 0o644);
});

test('stopping a download early cancels it', LIMIT, async () => {
  const path = join(agent.dir, 'src.bin');
  let got = 0;
  for await (const chunk of client.readFile(path)) {
    got += chunk.byteLength;
    if (got > 3 * 1024 * 1024) break;
  }
  assert.ok(got > 0);
  await client.ping(); // The channel is still healthy.
  assert.equal((await readAll(join(agent.dir, 'plain'))).toString(), 'p');
});

test('networkEndpoints answers from /proc/net', LIMIT, async () => {
  const report = await client.networkEndpoints();
  assert.ok(Array.isArray(report.endpoints));
  for (const e of report.endpoints) assert.match(e, /^\S+ -> \S+ [A-Z_0-9]+$/);
});
