/** An upload the sandbox has no room for stops with NO_SPACE and leaves nothing behind (`roomForFiles`, the gVisor guard's check). */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RamifyError } from '@ramify/contracts';
import { receiveFile } from './file-transfer.js';
import { StreamRegistry, type FrameSink } from './stream-registry.js';

const dir = mkdtempSync(join(tmpdir(), 'ramify-upload-'));

/** Wait until the upload registered its stream (it opens the temporary file first). */
async function registered(streams: StreamRegistry, sid: number): Promise<void> {
  while (!streams.get(sid)) await new Promise((r) => setTimeout(r, 1));
}
after(() => rmSync(dir, { recursive: true, force: true }));

test('an upload past the room for files fails NO_SPACE and its temporary file is removed', async () => {
  const streams = new StreamRegistry();
  const sink: FrameSink = { send: () => undefined, writable: async () => undefined };
  let room = 3 * 65536;
  const written = receiveFile(join(dir, 'big.bin'), {
    sid: 1,
    sink,
    streams,
    roomForFiles: (bytes) => (room -= bytes) >= 0,
  });
  await registered(streams, 1);
  for (let i = 0; i < 5; i++) streams.get(1)?.onData?.(new Uint8Array(65536));
  streams.get(1)?.onEnd?.();
  await assert.rejects(written, (err: unknown) => err instanceof RamifyError && err.code === 'NO_SPACE' && /no room for .*big\.bin/.test(err.message));
  assert.deepEqual(readdirSync(dir), []);
});

test('with room, the upload lands whole', async () => {
  const streams = new StreamRegistry();
  const sink: FrameSink = { send: () => undefined, writable: async () => undefined };
  const written = receiveFile(join(dir, 'ok.bin'), { sid: 2, sink, streams, roomForFiles: () => true });
  await registered(streams, 2);
  streams.get(2)?.onData?.(new Uint8Array(1000));
  streams.get(2)?.onEnd?.();
  assert.equal((await written).size, 1000);
});
