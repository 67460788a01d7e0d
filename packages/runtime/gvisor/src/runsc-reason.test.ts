import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runscReason } from './runsc.js';

// The tail of a real runsc 20240729 log: a restore of an image made by runsc 20221219.
const RESTORE_LOG = `I1201 23:10:01.000000   17 main.go:201] ***************************
W1201 23:10:02.123456   17 util.go:64] FATAL ERROR: starting container: restoring container "rmx-o.mx5aovbu": error decoding object ID 1 (cpuid.FeatureSet) from &wire.Struct{TypeID:0x1, fields:(*wire.Ref)(0xc000374150)}: type "pkg/cpuid.FeatureSet" contains different fields: [Function hwCap] (decode) and [Function] (encode):
goroutine 1 [running]:
panic({0x11416a0?, 0xc0006160b0?})
\t/usr/lib/go-1.22/src/runtime/panic.go:770 +0x132
reflect.Value.call({0xc0000c0ba0?, 0xc0003065f8?, 0xc000161c70?}, {0x13346f8, 0x4}, {0xc000161eb0, 0x3, 0xc000161ca0?})
gvisor.dev/gvisor/pkg/urpc.(*Server).StartHandling.func1()
\tgvisor.dev/gvisor/pkg/urpc/urpc.go:453 +0x76
created by gvisor.dev/gvisor/pkg/urpc.(*Server).StartHandling in goroutine 12
\tgvisor.dev/gvisor/pkg/urpc/urpc.go:451 +0x6b
`;

test('the reason is the error line in full, without the glog prefix and the Go traces around it', () => {
  const reason = runscReason(RESTORE_LOG);
  assert.match(reason, /^FATAL ERROR: starting container: restoring container "rmx-o\.mx5aovbu": error decoding object ID 1/);
  assert.match(reason, /contains different fields: \[Function hwCap\] \(decode\) and \[Function\] \(encode\):$/);
});

test('a Go struct dump inside the error line is elided, the words around it kept', () => {
  const dump = `checkpoint failed: encoding error at object tcp.Endpoint{TCPEndpointStateInner:stack.TCPEndpointStateInner{TSOffset:tcp.TSOffset{milliseconds:0xc3073d09}}, listenCtx:(*tcp.listenContext)(nil), ${'x:1, '.repeat(300)}}: encoding error: runtime error: invalid memory address or nil pointer dereference`;
  assert.equal(runscReason(dump), 'checkpoint failed: encoding error at object tcp.Endpoint{…}: encoding error: runtime error: invalid memory address or nil pointer dereference');
});

test('the last error line wins; long lines are kept up to 4000 characters; no output says so', () => {
  assert.equal(runscReason('\nW1129 noise\ncheckpoint failed: no such container\nmore'), 'checkpoint failed: no such container');
  assert.equal(runscReason(`error: ${'x'.repeat(5000)}`).length, 4000);
  assert.equal(runscReason(''), 'no output');
  assert.equal(runscReason('just a line'), 'just a line');
});
