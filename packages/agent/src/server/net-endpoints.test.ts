import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeProcAddress, isLoopback, parseProcNetTcp, reportableEndpoints } from './net-endpoints.js';

const TCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0CEA 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1234 1 0000000000000000 100 0 0 10 0
   1: 0200FE0A:A0D2 22D8B85D:01BB 01 00000000:00000000 00:00000000 00000000     0        0 2345 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:8C1E 0100007F:0CEA 01 00000000:00000000 00:00000000 00000000     0        0 3456 1 0000000000000000 20 4 30 10 -1
   3: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4567 1 0000000000000000 100 0 0 10 0
   4: 0200FE0A:1F90 0100FE0A:D431 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000000000000000
`;

const TCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0000000000000000 100 0 0 10 0
   8: 0000000000000000FFFF00000200FE0A:1F90 0000000000000000FFFF00000100FE0A:C588 06 00000000:00000000 03:00000F9A 00000000     0        0 0 3 0000000000000000
   9: 00000000000000000000000001000000:1F90 00000000000000000000000001000000:C589 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0000000000000000 20 4 30 10 -1
  10: 0000000000000000FFFF00000100007F:1F90 0000000000000000FFFF00000100007F:C590 01 00000000:00000000 00:00000000 00000000     0        0 333 1 0000000000000000 20 4 30 10 -1
  11: B80D0120000000000000000001000000:A000 B80D0120000000000000000002000000:0050 01 00000000:00000000 00:00000000 00000000     0        0 444 1 0000000000000000 20 4 30 10 -1
`;

test('decodes IPv4, IPv6 and IPv4-mapped addresses as the kernel prints them', () => {
  assert.deepEqual(decodeProcAddress('0100007F:0CEA'), { address: '127.0.0.1', port: 3306 });
  assert.deepEqual(decodeProcAddress('0000000000000000FFFF00000200FE0A:1F90'), { address: '::ffff:10.254.0.2', port: 8080 });
  assert.deepEqual(decodeProcAddress('00000000000000000000000001000000:1F90'), { address: '::1', port: 8080 });
  assert.deepEqual(decodeProcAddress('B80D0120000000000000000001000000:A000'), { address: '2001:db8::1', port: 40960 });
  assert.deepEqual(decodeProcAddress('00000000000000000000000000000000:0016'), { address: '::', port: 22 });
});

test('loopback detection', () => {
  for (const a of ['127.0.0.1', '127.9.8.7', '::1', '::ffff:127.0.0.1']) assert.ok(isLoopback(a), a);
  for (const a of ['10.0.0.2', '::', '0.0.0.0', '::ffff:10.254.0.2', '2001:db8::1']) assert.ok(!isLoopback(a), a);
});

test('reports non-listening, non-loopback sockets, TIME_WAIT included', () => {
  assert.deepEqual(reportableEndpoints(parseProcNetTcp(TCP)), [
    '10.254.0.2:41170 -> 93.184.216.34:443 ESTABLISHED',
    '10.254.0.2:8080 -> 10.254.0.1:54321 TIME_WAIT',
  ]);
  assert.deepEqual(reportableEndpoints(parseProcNetTcp(TCP6)), [
    '10.254.0.2:8080 -> 10.254.0.1:50568 TIME_WAIT',
    '[2001:db8::1]:40960 -> [2001:db8::2]:80 ESTABLISHED',
  ]);
});

test('malformed input yields nothing rather than throwing', () => {
  assert.deepEqual(parseProcNetTcp(''), []);
  assert.deepEqual(parseProcNetTcp('garbage\n  x: y z\n'), []);
});

test("the host's established connection to the agent's TCP port is left out; a half-made one there is reported", () => {
  const agentPort = `  sl  local_address rem_address   st
   0: 0200FE0A:C33E 0100C80A:D431 01 00000000:00000000 00:00000000 00000000     0        0 1 1
   1: 0200FE0A:C33E 0100C80A:D432 03 00000000:00000000 00:00000000 00000000     0        0 2 1
   2: 0200FE0A:1F90 0100C80A:D433 01 00000000:00000000 00:00000000 00000000     0        0 3 1
`;
  assert.deepEqual(reportableEndpoints(parseProcNetTcp(agentPort), 49982), ['10.254.0.2:49982 -> 10.200.0.1:54322 SYN_RECV', '10.254.0.2:8080 -> 10.200.0.1:54323 ESTABLISHED']);
  assert.equal(reportableEndpoints(parseProcNetTcp(agentPort)).length, 3, 'without the port, all');
});
