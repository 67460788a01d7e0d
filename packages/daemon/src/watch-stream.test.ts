/**
 * HTTP-edge tests of the watch WebSocket and its stop route, in-process, over core's FAKE runtime and
 * agent (routing, framing, error mapping; NOT agent coverage: real-watch.test.ts drives the real one).
 */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
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

/** Text frames of `ws` as parsed JSON, as they come; resolves `closed` with the close code. */
function frames(ws: WebSocket): { all: Array<Record<string, unknown>>; closed: Promise<number> } {
  const all: Array<Record<string, unknown>> = [];
  ws.on('message', (data) => all.push(JSON.parse(data.toString()) as Record<string, unknown>));
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => (ws.terminate(), resolve(code))));
  return { all, closed };
}

const until = async (check: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check());
};

test('files/watch: watching first, events of a write, stop → end stopped and close 1000; the stop route answers 404 after', async () => {
  let got!: ReturnType<typeof frames>;
  const ws = await bed.app.injectWS(`/v1/sandboxes/${id}/files/watch?path=/root&recursive=true`, { headers: bed.auth }, { onInit: (s) => (got = frames(s)) });
  await until(() => got.all.length > 0);
  assert.deepEqual(got.all[0], { type: 'watching', watchId: 'w1', path: '/root', recursive: true, from: 1 });
  const put = await bed.app.inject({ method: 'PUT', url: `/v1/sandboxes/${id}/files?path=/root/a.txt`, headers: { ...bed.auth, 'content-type': 'application/octet-stream' }, payload: Buffer.from('x') });
  assert.equal(put.statusCode, 200);
  await until(() => got.all.length > 1);
  assert.deepEqual(got.all[1], { type: 'events', events: [{ type: 'create', name: 'a.txt', path: '/root/a.txt', isDir: false, seq: 1 }] });
  ws.send(JSON.stringify({ type: 'stop' }));
  assert.equal(await got.closed, 1000);
  assert.deepEqual(got.all.at(-1), { type: 'end', reason: 'stopped' });
  const stop = await bed.app.inject({ method: 'DELETE', url: `/v1/sandboxes/${id}/files/watch/w1`, headers: bed.auth });
  assert.deepEqual([stop.statusCode, stop.json().error.code], [404, 'WATCH_NOT_FOUND']);
  const audit = (await bed.app.inject({ method: 'GET', url: `/v1/audit?sandboxId=${id}`, headers: bed.auth })).json().entries;
  assert.ok(audit.some((e: { action: string }) => e.action === 'files.watch'));
});

test('files/watch refusals: a file → NOT_A_DIRECTORY, an unknown watch → WATCH_NOT_FOUND, a bad query, each an error frame then 1008', async () => {
  await bed.app.inject({ method: 'PUT', url: `/v1/sandboxes/${id}/files?path=/root/f`, headers: { ...bed.auth, 'content-type': 'application/octet-stream' }, payload: Buffer.from('x') });
  for (const [url, code] of [
    [`/v1/sandboxes/${id}/files/watch?path=/root/f`, 'NOT_A_DIRECTORY'],
    [`/v1/sandboxes/${id}/files/watch/w9?from=3`, 'WATCH_NOT_FOUND'],
    [`/v1/sandboxes/${id}/files/watch?path=/root&recursive=maybe`, 'VALIDATION_FAILED'],
    ['/v1/sandboxes/sbx_nope/files/watch?path=/root', 'SANDBOX_NOT_FOUND'],
  ] as const) {
    let got!: ReturnType<typeof frames>;
    await bed.app.injectWS(url, { headers: bed.auth }, { onInit: (s) => (got = frames(s)) });
    assert.equal(await got.closed, 1008, url);
    assert.equal(got.all[0]?.code, code, url);
  }
});
