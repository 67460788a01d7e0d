/**
 * Protocol tests of `sandbox.files` against the in-test contract fixture: streamed uploads and
 * downloads, formats (bytes stay bytes: a text read of non-UTF-8 content throws), metadata calls and
 * error mapping. The fixture keeps files in memory.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { createHash } from 'node:crypto';
import { startContractServer, type ContractServer } from './testing/contract-server.js';
import { NotFoundError, NotUtf8Error, RamifyError, Sandbox } from './index.js';

let server: ContractServer;
let sbx: Sandbox;
before(async () => {
  server = await startContractServer();
  sbx = await Sandbox.create({ apiUrl: server.url, apiKey: server.apiKey });
});
after(async () => { await server.close(); });

describe('protocol: files', () => {
  test('text and bytes round trip', async () => {
    const info = await sbx.files.write('/work/a.txt', 'héllo');
    assert.equal(info.size, Buffer.byteLength('héllo'));
    assert.equal(await sbx.files.read('/work/a.txt'), 'héllo');
    assert.deepEqual(await sbx.files.read('/work/a.txt', { format: 'bytes' }), new Uint8Array(Buffer.from('héllo')));
  });

  test('a text read of bytes that are not UTF-8 throws NotUtf8Error naming format: bytes; bytes and stream are exact', async () => {
    // A PNG's signature and header: 0x89 and the 0x00 bytes of IHDR's length; 0x89 alone is invalid UTF-8.
    const png = new Uint8Array(135);
    png.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52]);
    for (let i = 16; i < png.length; i++) png[i] = (i * 37) & 0xff;
    assert.equal((await sbx.files.write('/img.png', png)).size, 135);
    for (const read of [() => sbx.files.read('/img.png'), () => sbx.files.read('/img.png', { format: 'text' })]) {
      await assert.rejects(read(), (e: unknown) => {
        assert.ok(e instanceof NotUtf8Error && e instanceof RamifyError, String(e));
        assert.equal(e.code, 'NOT_UTF8');
        assert.equal(e.name, 'NotUtf8Error');
        assert.match(e.message, /\/img\.png/);
        assert.match(e.message, /format: 'bytes'/);
        assert.deepEqual(e.details, { path: '/img.png', size: 135 });
        return true;
      });
    }
    assert.deepEqual(await sbx.files.read('/img.png', { format: 'bytes' }), png);
    const chunks: Uint8Array[] = [];
    for await (const c of await sbx.files.read('/img.png', { format: 'stream' })) chunks.push(c);
    assert.deepEqual(new Uint8Array(Buffer.concat(chunks)), png);
  });

  test('a multi-byte character cut off at the end is not text either; valid UTF-8 (BOM dropped) is', async () => {
    await sbx.files.write('/cut.txt', new Uint8Array([0x63, 0x61, 0x66, 0xc3])); // 'caf' and half of 'é'
    await assert.rejects(sbx.files.read('/cut.txt'), (e: unknown) => e instanceof NotUtf8Error);
    await sbx.files.write('/bom.txt', new Uint8Array([0xef, 0xbb, 0xbf, 0x63, 0x61, 0x66, 0xc3, 0xa9]));
    assert.equal(await sbx.files.read('/bom.txt'), 'café');
    assert.equal((await sbx.files.read('/bom.txt', { format: 'bytes' })).byteLength, 8);
  });

  test('a Blob uploads (streamed) and reads back exactly', async () => {
    const bytes = new Uint8Array(300 * 1024).map((_, i) => (i * 131) & 0xff);
    const info = await sbx.files.write('/blob.bin', new Blob([bytes.subarray(0, 1000), bytes.subarray(1000)]));
    assert.equal(info.size, bytes.byteLength);
    assert.deepEqual(await sbx.files.read('/blob.bin', { format: 'bytes' }), bytes);
  });

  test('a stream that throws mid-upload rejects with its own error, and the old file stays', async () => {
    await sbx.files.write('/keep.txt', 'old');
    const boom = new Error('disk on fire');
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(64 * 1024);
      throw boom;
    }
    await assert.rejects(sbx.files.write('/keep.txt', failing()), (e: unknown) => e === boom);
    const web = new ReadableStream<Uint8Array>({ start(c) { c.enqueue(new Uint8Array(8)); c.error(boom); } });
    await assert.rejects(sbx.files.write('/keep.txt', web), (e: unknown) => e === boom);
    assert.equal(await sbx.files.read('/keep.txt'), 'old');
  });

  test('a Node Readable and a web ReadableStream upload streamed; read as a stream', async () => {
    const chunk = Buffer.alloc(256 * 1024, 7);
    const total = 24;
    const hash = createHash('sha256');
    for (let i = 0; i < total; i++) hash.update(chunk);
    const info = await sbx.files.write('/big.bin', Readable.from((function* () { for (let i = 0; i < total; i++) yield chunk; })()));
    assert.equal(info.size, chunk.length * total);
    const stream = await sbx.files.read('/big.bin', { format: 'stream' });
    const got = createHash('sha256');
    for await (const c of stream) got.update(c);
    assert.equal(got.digest('hex'), hash.digest('hex'));
    const web = new ReadableStream<Uint8Array>({ start(c) { c.enqueue(new Uint8Array([1, 2])); c.enqueue(new Uint8Array([3])); c.close(); } });
    await sbx.files.write('/web.bin', web);
    assert.deepEqual([...(await sbx.files.read('/web.bin', { format: 'bytes' }))], [1, 2, 3]);
  });

  test('list, getInfo, exists, makeDir, rename, remove', async () => {
    await sbx.files.write('/d/x.txt', 'x');
    assert.equal(await sbx.files.makeDir('/d/sub'), true);
    assert.equal(await sbx.files.makeDir('/d/sub'), false);
    assert.deepEqual((await sbx.files.list('/d')).map((e) => `${e.type}:${e.name}`), ['dir:sub', 'file:x.txt']);
    assert.equal((await sbx.files.getInfo('/d/x.txt')).type, 'file');
    const moved = await sbx.files.rename('/d/x.txt', '/d/sub/y.txt');
    assert.equal(moved.path, '/d/sub/y.txt');
    assert.equal(await sbx.files.exists('/d/x.txt'), false);
    assert.deepEqual((await sbx.files.list('/d', { depth: 2 })).map((e) => e.path), ['/d/sub', '/d/sub/y.txt']);
    await sbx.files.remove('/d');
    assert.equal(await sbx.files.exists('/d/sub/y.txt'), false);
    await assert.rejects(sbx.files.read('/d/sub/y.txt'), (e: unknown) => e instanceof NotFoundError && e.code === 'FILE_NOT_FOUND');
    await assert.rejects(sbx.files.read('/root'), (e: unknown) => (e as { code?: string }).code === 'IS_A_DIRECTORY');
  });
});
