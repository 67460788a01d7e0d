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
