/**
 * The terminal master: a read of 0 bytes does not end the terminal (gVisor answers one now and then
 * after a restore; shown here with a FIFO, which reads 0 while it has no writer), and a real host
 * terminal started through `startIo` takes input and gives all of its output up to the exit.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { eventually } from '../test-support/agent-harness.js';
import { startIo, type RawExit } from './process-io.js';
import { TerminalMaster } from './terminal-master.js';

let dir: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-terminal-master-'));
});

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

test('reads of 0 bytes do not end the output: bytes written after them arrive, until close()', async () => {
  const fifo = join(dir, 'master');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
  const master = new TerminalMaster(openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK));
  const parts: Buffer[] = [];
  let ended = false;
  master.output.on('data', (d: Buffer) => parts.push(d));
  master.output.on('end', () => (ended = true));
  const text = (): string => Buffer.concat(parts).toString();

  const first = openSync(fifo, constants.O_WRONLY);
  writeSync(first, 'one');
  closeSync(first); // From here every read answers 0 until a writer comes back.
  await eventually(() => text() === 'one', 'the first bytes arrive');
  await new Promise((r) => setTimeout(r, 100)); // Many reads of 0 meanwhile (they back off).
  const second = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  writeSync(second, 'two');
  await eventually(() => text() === 'onetwo', 'bytes written after the reads of 0 arrive');
  assert.equal(ended, false, 'the output did not end at a read of 0');
  closeSync(second);
  master.close();
  await eventually(() => ended, 'close() ends the output');
  assert.ok(master.input.destroyed, 'and closes the input');
});

test('a host terminal: a shell at its prompt answers a line, and all its output arrives before the exit', async () => {
  const io = startIo({
    file: '/bin/bash',
    args: ['--norc', '--noprofile', '-i'],
    cwd: '/',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TERM: 'xterm-256color', PS1: 'READY$ ' },
    keepStdin: true,
    pty: { cols: 80, rows: 24 },
  });
  const [[fd, output]] = io.outputs;
  assert.equal(fd, 1);
  const parts: Buffer[] = [];
  output.on('data', (d: Buffer) => parts.push(d));
  const ended = new Promise<void>((resolve) => output.on('end', resolve));
  const exited = new Promise<RawExit>((resolve) => io.onExit(resolve));
  const text = (): string => Buffer.concat(parts).toString();
  await eventually(() => text().includes('READY$ '), 'the prompt');
  io.input?.write('echo "answer $((6*7))"\r');
  await eventually(() => text().includes('answer 42'), 'the answer');
  io.input?.write('head -c 200000 /dev/zero | tr "\\0" Q; exit 3\r');
  assert.deepEqual(await exited, { code: 3, signal: null });
  await ended;
  // 200,000 from `tr`, and one in the echo of the line typed.
  assert.equal(text().split('Q').length - 1, 200_001, 'every byte written before the exit arrived');
});
