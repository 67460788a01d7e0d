/**
 * HTTP-edge tests of files, processes and WebSocket streams, in-process, over a core wired to core's
 * FAKE runtime and agent (routing, framing, raw bodies, error mapping; NOT runtime or agent coverage).
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_MAX_OUTPUT_BYTES, StreamChannel } from '@ramify/contracts';
import type { WebSocket } from 'ws';
import { httpTestBed, type HttpTestBed } from './test-support.js';

let bed: HttpTestBed;
let id: string;
beforeEach(async () => {
  bed = await httpTestBed();
  id = (await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: bed.auth, payload: {} })).json().id;
});
afterEach(async () => {
  await bed.dispose();
});

describe('HTTP edge with the fake agent: files', () => {
  test('raw upload larger than the JSON limit, download of the same bytes, stat/list/mkdir/rename/remove', async () => {
    const content = 'x'.repeat(3 << 20);
    const put = await bed.app.inject({ method: 'PUT', url: `/v1/sandboxes/${id}/files?path=/root/big.txt`, headers: { ...bed.auth, 'content-type': 'application/octet-stream' }, payload: Buffer.from(content) });
    assert.equal(put.statusCode, 200, put.body);
    assert.equal(put.json().size, 3 << 20);
    const get = await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}/files?path=/root/big.txt`, headers: bed.auth });
    assert.equal(get.statusCode, 200);
    assert.equal(get.headers['content-type'], 'application/octet-stream');
    assert.equal(get.rawPayload.byteLength, 3 << 20);
    assert.equal((await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}/files/stat?path=/root/big.txt`, headers: bed.auth })).json().type, 'file');
    const list = await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}/files/list?path=/root&depth=1`, headers: bed.auth });
    assert.ok(list.json().entries.some((e: { path: string }) => e.path === '/root/big.txt'));
    assert.equal((await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/files/mkdir`, headers: bed.auth, payload: { path: '/root/d' } })).json().type, 'dir');
    const renamed = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/files/rename`, headers: bed.auth, payload: { from: '/root/big.txt', to: '/root/b.txt' } });
    assert.equal(renamed.json().path, '/root/b.txt');
    assert.equal((await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/files/remove`, headers: bed.auth, payload: { path: '/root/b.txt' } })).statusCode, 204);
    const missing = await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}/files?path=/root/b.txt`, headers: bed.auth });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().error.code, 'FILE_NOT_FOUND');
  });

  test('an upload sent as JSON is refused with a hint', async () => {
    const res = await bed.app.inject({ method: 'PUT', url: `/v1/sandboxes/${id}/files?path=/root/a`, headers: bed.auth, payload: { a: 1 } });
    assert.equal(res.statusCode, 400);
    assert.match(res.json().error.message, /octet-stream/);
  });
});

describe('HTTP edge with the fake agent: processes', () => {
  test('foreground result, background pid, stdin (raw), close stdin, wait, signal, list', async () => {
    const fg = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/commands`, headers: bed.auth, payload: { cmd: 'echo hi' } });
    assert.deepEqual({ ...(fg.json() as object), pid: 0 }, {
      pid: 0, exitCode: 0, signal: null, stdout: 'hi\n', stderr: '', error: null, truncated: false,
      capture: { limitBytes: DEFAULT_MAX_OUTPUT_BYTES, stdout: { keptBytes: 3, totalBytes: 3 }, stderr: { keptBytes: 0, totalBytes: 0 } },
    });
    const cat = (await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/commands`, headers: bed.auth, payload: { cmd: 'cat', background: true, stdin: true } })).json();
    assert.deepEqual(Object.keys(cat), ['pid']);
    const stdin = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/processes/${cat.pid}/stdin`, headers: { ...bed.auth, 'content-type': 'application/octet-stream' }, payload: Buffer.from('abc') });
    assert.equal(stdin.statusCode, 204, stdin.body);
    assert.equal((await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/processes/${cat.pid}/stdin/close`, headers: bed.auth })).statusCode, 204);
    assert.deepEqual((await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}/processes/${cat.pid}/wait`, headers: bed.auth })).json(), { exitCode: 0, signal: null, error: null });
    const sleeper = (await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/commands`, headers: bed.auth, payload: { cmd: 'sleep', background: true } })).json();
    assert.equal((await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/processes/${sleeper.pid}/signal`, headers: bed.auth, payload: { signal: 'SIGKILL' } })).statusCode, 204);
    const procs = (await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}/processes`, headers: bed.auth })).json().processes;
    assert.deepEqual(procs.map((p: { pid: number; running: boolean; stdoutBytes: number }) => [p.pid, p.running]), [[fg.json().pid, false], [cat.pid, false], [sleeper.pid, false]]);
    const bad = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/processes/abc/signal`, headers: bed.auth, payload: { signal: 'SIGKILL' } });
    assert.match(bad.json().error.message, /params\.pid/);
    const unknownSignal = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/processes/1/signal`, headers: bed.auth, payload: { signal: 'SIGWHAT' } });
    assert.equal(unknownSignal.statusCode, 400);
  });

  test("a foreground result past the core's maxOutputBytes says truncated, with the counts", async () => {
    bed.world.core.options.maxOutputBytes = 4;
    const fg = (await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/commands`, headers: bed.auth, payload: { cmd: 'echo abcdef' } })).json();
    assert.equal(fg.exitCode, 0);
    assert.equal(fg.stdout, 'abcd');
    assert.equal(fg.truncated, true);
    assert.deepEqual(fg.capture, { limitBytes: 4, stdout: { keptBytes: 4, totalBytes: 7 }, stderr: { keptBytes: 0, totalBytes: 0 } });
  });
});

/** Collect frames until the socket closes. */
function collect(ws: WebSocket): Promise<{ frames: Array<string | Buffer>; code: number }> {
  const frames: Array<string | Buffer> = [];
  return new Promise((resolve) => {
    ws.on('message', (data, isBinary) => frames.push(isBinary ? (data as Buffer) : data.toString()));
    ws.on('close', (code) => {
      ws.terminate(); // the in-memory socket of injectWS does not end by itself
      resolve({ frames, code });
    });
  });
}

describe('HTTP edge with the fake agent: WebSocket streams', () => {
  test('commands/stream: start → started, stdout frames on channel 1, stdin echo, exit, close 1000', async () => {
    let done!: Promise<{ frames: Array<string | Buffer>; code: number }>;
    const ws = await bed.app.injectWS(`/v1/sandboxes/${id}/commands/stream`, { headers: bed.auth }, { onInit: (socket) => (done = collect(socket)) });
    ws.send(JSON.stringify({ type: 'start', request: { cmd: 'cat', stdin: true } }));
    ws.send(Buffer.concat([Buffer.from([StreamChannel.stdin]), Buffer.from('ping')]));
    ws.send(JSON.stringify({ type: 'closeStdin' }));
    const { frames, code } = await done;
    assert.equal(code, 1000);
    assert.deepEqual(JSON.parse(frames[0] as string), { type: 'started', pid: JSON.parse(frames[0] as string).pid, maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES });
    const out = frames[1] as Buffer;
    assert.equal(out[0], StreamChannel.stdout);
    assert.equal(out.subarray(1).toString(), 'ping');
    assert.deepEqual(JSON.parse(frames[2] as string), { type: 'exit', exitCode: 0, signal: null, error: null });
    const audit = (await bed.app.inject({ method: 'GET', url: `/v1/audit?sandboxId=${id}`, headers: bed.auth })).json().entries;
    assert.equal(audit[0].action, 'command.stream');
  });

  test('commands/stream on an unknown sandbox: error frame then close 1008; a bad start message too', async () => {
    let done!: Promise<{ frames: Array<string | Buffer>; code: number }>;
    await bed.app.injectWS('/v1/sandboxes/sbx_nope/commands/stream', { headers: bed.auth }, { onInit: (socket) => (done = collect(socket)) });
    const { frames, code } = await done;
    assert.equal(code, 1008);
    assert.equal(JSON.parse(frames[0] as string).code, 'SANDBOX_NOT_FOUND');

    let done2!: Promise<{ frames: Array<string | Buffer>; code: number }>;
    const ws = await bed.app.injectWS(`/v1/sandboxes/${id}/commands/stream`, { headers: bed.auth }, { onInit: (socket) => (done2 = collect(socket)) });
    ws.send(JSON.stringify({ type: 'start', request: { cmd: 'echo', bogus: 1 } }));
    const second = await done2;
    assert.equal(second.code, 1008);
    assert.match(JSON.parse(second.frames[0] as string).message, /unknown field 'bogus'/);
  });

  test('processes/:pid/stream: started first (the replay waits for it), the replay from the offsets, then the exit', async () => {
    const fg = (await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/commands`, headers: bed.auth, payload: { cmd: 'echo hello' } })).json();
    let done!: Promise<{ frames: Array<string | Buffer>; code: number }>;
    await bed.app.injectWS(`/v1/sandboxes/${id}/processes/${fg.pid}/stream?stdout=2&stderr=0`, { headers: bed.auth }, { onInit: (socket) => (done = collect(socket)) });
    const { frames, code } = await done;
    assert.equal(code, 1000);
    const [started, replay, exit] = frames;
    assert.deepEqual(JSON.parse(started as string), { type: 'started', pid: fg.pid, maxOutputBytes: DEFAULT_MAX_OUTPUT_BYTES });
    assert.ok(Buffer.isBuffer(replay));
    assert.equal(replay.subarray(1).toString(), 'llo\n');
    assert.equal(JSON.parse(exit as string).type, 'exit');
  });

  test('a pause ends a live stream with close 1001 and no exit frame (the client re-attaches later)', async () => {
    let done!: Promise<{ frames: Array<string | Buffer>; code: number }>;
    const ws = await bed.app.injectWS(`/v1/sandboxes/${id}/commands/stream`, { headers: bed.auth }, { onInit: (socket) => (done = collect(socket)) });
    const started = new Promise((resolve) => ws.once('message', resolve));
    ws.send(JSON.stringify({ type: 'start', request: { cmd: 'sleep' } }));
    await started;
    const paused = await bed.app.inject({ method: 'POST', url: `/v1/sandboxes/${id}/pause`, headers: bed.auth });
    assert.equal(paused.statusCode, 200);
    const { frames, code } = await done;
    assert.equal(code, 1001);
    assert.ok(!frames.some((f) => typeof f === 'string' && JSON.parse(f).type === 'exit'));
  });

  test('WebSocket routes need the API key', async () => {
    await assert.rejects(bed.app.injectWS(`/v1/sandboxes/${id}/commands/stream`, {}), /401|Unexpected server response/);
    await assert.rejects(bed.app.injectWS(`/v1/sandboxes/${id}/pty/stream`, {}), /401|Unexpected server response/);
  });
});
