/** The char-device stream on a FIFO, which reads like a virtio port: EOF while no writer, EAGAIN or data with one. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, constants, fstatSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { eventually } from '../test-support/agent-harness.js';
import { continueCharDeviceStream, openCharDeviceStream } from './char-device-stream.js';
import { probeHost } from './virtio-port.js';

let dir: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-char-stream-'));
});

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

function collect(stream: Socket): { text: () => string; ended: Promise<void> } {
  const parts: Buffer[] = [];
  stream.on('data', (d: Buffer) => parts.push(d));
  const ended = new Promise<void>((resolve) => stream.once('end', () => resolve()));
  return { text: () => Buffer.concat(parts).toString(), ended };
}

test('after EOF the same fd goes on in a new stream: data from the next writer arrives, the old stream no longer owns the fd', async () => {
  const fifo = join(dir, 'port');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const first = openCharDeviceStream(reader);
  const got1 = collect(first);
  const writer1 = openSync(fifo, constants.O_WRONLY);
  writeSync(writer1, 'one');
  closeSync(writer1); // The "host" leaves: EOF after its bytes.
  await got1.ended;
  assert.equal(got1.text(), 'one');
  assert.deepEqual(probeHost(reader), { host: 'absent' });

  const writer2 = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK); // A host again.
  assert.deepEqual(probeHost(reader), { host: 'present' });
  writeSync(writer2, 'two');
  const next = continueCharDeviceStream(first);
  const got2 = collect(next);
  await eventually(() => got2.text() === 'two', 'bytes after the EOF arrive on the continued stream');
  first.destroy(); // Gave up the fd: destroying it must not close the fd.
  assert.ok(fstatSync(reader).isFIFO());
  writeSync(writer2, 'three');
  await eventually(() => got2.text() === 'twothree', 'and keep arriving');
  closeSync(writer2);
  await got2.ended;
  next.destroy();
  await eventually(() => {
    try {
      fstatSync(reader);
      return false;
    } catch {
      return true;
    }
  }, 'the continued stream closed the fd');
  assert.throws(() => continueCharDeviceStream(next), /destroyed/);
});
