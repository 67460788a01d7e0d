import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveConnection, type ConnectionEnvironment } from './connection.js';

const envOf = (env: Record<string, string>, files: Record<string, string> = {}): ConnectionEnvironment => ({
  env, readFile: (p) => files[p],
});

test('resolveConnection: defaults to loopback:7423 and no key', () => {
  const c = resolveConnection({}, envOf({}));
  assert.deepEqual({ ...c }, { apiUrl: 'http://127.0.0.1:7423', requestTimeoutMs: 60_000, hasApiKey: false, headers: {} });
  assert.equal(c.revealApiKey(), undefined);
});

test('resolveConnection: explicit options beat env, env beats key files', () => {
  const files = { '/h/api-key': 'rmf_home\n', '/var/lib/ramify/api-key': 'rmf_system' };
  const env = { RAMIFY_API_URL: 'http://env:1/', RAMIFY_API_KEY: 'rmf_env', RAMIFY_HOME: '/h' };
  assert.equal(resolveConnection({ apiKey: 'rmf_opt', apiUrl: 'http://x:2' }, envOf(env, files)).revealApiKey(), 'rmf_opt');
  assert.equal(resolveConnection({}, envOf(env, files)).revealApiKey(), 'rmf_env');
  assert.equal(resolveConnection({}, envOf(env, files)).apiUrl, 'http://env:1');
  assert.equal(resolveConnection({}, envOf({ RAMIFY_HOME: '/h' }, files)).revealApiKey(), 'rmf_home');
  assert.equal(resolveConnection({}, envOf({}, files)).revealApiKey(), 'rmf_system');
  assert.equal(resolveConnection({}, envOf({ RAMIFY_HOME: '/nope' }, { '/var/lib/ramify/api-key': ' rmf_s ' })).revealApiKey(), 'rmf_s');
});

test('ConnectionConfig: the key is reachable only through revealApiKey()', () => {
  const c = resolveConnection({ apiKey: 'rmf_hidden' }, envOf({}));
  assert.equal(c.hasApiKey, true);
  assert.equal(c.revealApiKey(), 'rmf_hidden');
  assert.deepEqual(Object.keys(c).sort(), ['apiUrl', 'hasApiKey', 'headers', 'requestTimeoutMs']);
  assert.ok(!JSON.stringify(c).includes('rmf_hidden'));
  assert.equal(resolveConnection({ apiKey: '' }, envOf({})).hasApiKey, false);
});

test('resolveConnection: extra headers are kept, an authorization among them is not (the key is apiKey)', () => {
  const c = resolveConnection({ apiKey: 'rmf_k', headers: { 'x-ramify-mcp-tool': 'command_run', Authorization: 'Bearer rmf_other' } }, envOf({}));
  assert.deepEqual(c.headers, { 'x-ramify-mcp-tool': 'command_run' });
  assert.equal(c.revealApiKey(), 'rmf_k');
});
