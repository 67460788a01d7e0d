/** The reason a failed `runsc checkpoint` reports (no runsc needed: its output, as runsc 20221219 prints it). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkpointFailure } from './gvisor-runtime.js';

test('an open TCP connection is named by its addresses, not by the Go struct dump', () => {
  const stderr = [
    'checkpoint failed: checkpointing container "sbx_1.mx2f0sp9": encoding error at object tcp.endpoint{TCPEndpointStateInner:stack.TCPEndpointStateInner{TSOffset:tcp.TSOffset{milliseconds:0xc3073d09}}, listenCtx:(*tcp.listenContext)(nil)}: save rejected due to unsupported networking state: endpoint cannot be saved in connected state: local 10.254.0.2:54799, remote 192.0.2.10:80:',
    'goroutine 2499 [running]:',
    'gvisor.dev/gvisor/pkg/state.safely.func1()',
  ].join('\n');
  assert.equal(checkpointFailure(stderr), 'a TCP connection was open (local 10.254.0.2:54799, remote 192.0.2.10:80; gVisor cannot checkpoint an open non-loopback connection, one in TIME_WAIT included)');
});

test('any other failure keeps its first line that says what failed, at most 500 characters', () => {
  assert.equal(checkpointFailure('\nW1129 noise\ncheckpoint failed: no such container\nmore'), 'checkpoint failed: no such container');
  assert.equal(checkpointFailure(`error: ${'x'.repeat(900)}`).length, 500);
});
