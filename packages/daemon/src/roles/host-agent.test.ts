import assert from 'node:assert/strict';
import { test } from 'node:test';
import { edgeAddress } from './host-agent.js';

test('edgeAddress: a specific listen address is kept; wildcard and loopback take the advertise URL host', () => {
  assert.equal(edgeAddress('10.199.0.11:7424', 'http://10.199.0.11:7423'), '10.199.0.11:7424');
  assert.equal(edgeAddress('0.0.0.0:2222', 'http://host-b.internal:7423'), 'host-b.internal:2222');
  assert.equal(edgeAddress('::1:2222', 'https://[fd00::5]:443'), '[fd00::5]:2222');
  assert.equal(edgeAddress('127.0.0.1:7424', 'http://10.0.0.5:7423'), '10.0.0.5:7424');
  assert.equal(edgeAddress('fd00::7:7424', 'http://x:1'), '[fd00::7]:7424');
});
