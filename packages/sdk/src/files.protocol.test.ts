/**
 * Protocol tests of `sandbox.files` against the in-test contract fixture: streamed uploads and
 * downloads, formats, metadata calls and error mapping. The fixture keeps files in memory.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { createHash } from 'node:crypto';
import { startContractServer, type ContractServer } from './testing/contract-server.js';
import { NotFoundError, Sandbox } from './index.js';

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
