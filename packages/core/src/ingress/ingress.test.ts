/**
 * The ingress domain in core: exposed ports are validated and stored before they are acknowledged, kept
 * across pause, resume, fork (own token per fork), named snapshots and a restart (a new core over the same
 * store); tokens are 256-bit and compared in constant time; a request to a paused sandbox wakes it once for
 * all concurrent callers, and not at all when autoResume is off. FAKE runtime, network and agent (core
 * logic only) and a real SQLite store.
 */
import { afterEach, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from '../lifecycle/create.js';
import { forkSandbox } from '../lifecycle/fork.js';
import { killSandbox } from '../lifecycle/kill.js';
import { pauseSandbox } from '../lifecycle/pause.js';
import { resumeSandbox } from '../lifecycle/resume.js';
import { snapshotSandbox } from '../lifecycle/snapshot.js';
import { toSandboxInfo } from '../lifecycle/records.js';
import { isWellFormedToken, newAccessToken, sandboxAccessToken, tokensEqual } from './access-token.js';
import { exposePort, setAutoResume, unexposePort } from './expose.js';
import { getPortUrl, listPorts } from './get-ports.js';
import { ingressTarget, wakeForIngress } from './ingress-target.js';
import { diagnoseListeners, isLoopbackHex } from './listeners.js';
import { getIngressLog } from './ingress-log.js';
import { portHost } from './ports.js';

const ENDPOINT = { domain: 'localhost', port: 7424, protocol: 'http' as const };
let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld({ ingress: ENDPOINT });
});
afterEach(async () => {
  await w.dispose();
});

test('create takes ports (numbers or { port, access }); info carries what getHost needs', async () => {
  const s = await createSandbox(w.core, { ports: [8080, { port: 3000, access: 'public' }] });
  const info = toSandboxInfo(s, ENDPOINT);
  assert.deepEqual(info.ports, [{ port: 3000, access: 'public' }, { port: 8080, access: 'token' }]);
  assert.equal(info.autoResume, true, 'default on while a port is exposed');
  assert.deepEqual(info.ingress, ENDPOINT);
  assert.equal(portHost(ENDPOINT, s.id, 3000), `3000-${s.id.toLowerCase()}.localhost:7424`);
  const url = await getPortUrl(w.core, s.id, 8080);
  assert.ok(url.token && isWellFormedToken(url.token));
  assert.equal((await getPortUrl(w.core, s.id, 3000)).token, undefined, 'a public port has no token');
  assert.equal(toSandboxInfo(await createSandbox(w.core, {}), ENDPOINT).autoResume, false, 'nothing exposed: off');
});

test('bad ports are refused and nothing is stored', async () => {
  const s = await createSandbox(w.core, { ports: [3000] });
  for (const port of [0, 70000, 1.5, -1]) {
    await assert.rejects(exposePort(w.core, s.id, port), { code: 'VALIDATION_FAILED' });
  }
  await assert.rejects(createSandbox(w.core, { ports: [3000, 3000] }), { code: 'VALIDATION_FAILED' });
  await assert.rejects(createSandbox(w.core, { ports: [0] }), { code: 'VALIDATION_FAILED' });
  // The agent's own port (49982) is never a port URL.
  await assert.rejects(exposePort(w.core, s.id, 49982), { code: 'VALIDATION_FAILED', message: /reserved for the Ramify agent/ });
  await assert.rejects(createSandbox(w.core, { ports: [{ port: 49982, access: 'public' }] }), { code: 'VALIDATION_FAILED', message: /reserved for the Ramify agent/ });
  assert.deepEqual((await w.store.getSandbox(s.id))?.ingress.ports, [{ port: 3000, access: 'token' }]);
  await killSandbox(w.core, s.id);
  await assert.rejects(exposePort(w.core, s.id, 4000), { code: 'SANDBOX_NOT_FOUND' });
  await assert.rejects(ingressTarget(w.core, s.id, 3000), { code: 'SANDBOX_KILLED' });
  await assert.rejects(ingressTarget(w.core, 'sbx_00000000000000000000000000', 3000), { code: 'SANDBOX_NOT_FOUND' });
});

test('expose, change access, unexpose; 404 for a port not exposed', async () => {
  const s = await createSandbox(w.core, {});
  await assert.rejects(ingressTarget(w.core, s.id, 3000), { code: 'PORT_NOT_EXPOSED' });
  await assert.rejects(getPortUrl(w.core, s.id, 3000), { code: 'PORT_NOT_EXPOSED' });
  await exposePort(w.core, s.id, 3000);
  assert.equal((await ingressTarget(w.core, s.id, 3000)).access, 'token');
  await exposePort(w.core, s.id, 3000, { access: 'public' });
  assert.deepEqual((await listPorts(w.core, s.id)).ports.map((p) => [p.port, p.access, p.url]), [[3000, 'public', `http://3000-${s.id.toLowerCase()}.localhost:7424/`]]);
  await unexposePort(w.core, s.id, 3000);
  await unexposePort(w.core, s.id, 3000);
  assert.deepEqual((await listPorts(w.core, s.id)).ports, []);
});

test('ports survive pause, resume, a restart and a named snapshot; a fork has its own token', async () => {
  const s = await createSandbox(w.core, { ports: [{ port: 3000, access: 'public' }, 8080], autoResume: false });
  const token = await sandboxAccessToken(w.core, s.id);
  await pauseSandbox(w.core, s.id);
  await resumeSandbox(w.core, s.id);
  const forks = await forkSandbox(w.core, s.id, { count: 2 });
  const tokens = new Set([token]);
  for (const f of forks) {
    assert.deepEqual(f.ingress, { ports: [{ port: 3000, access: 'public' }, { port: 8080, access: 'token' }], autoResume: false });
    tokens.add(await sandboxAccessToken(w.core, f.id));
  }
  assert.equal(tokens.size, 3, 'every fork has its own token');
  const snap = await snapshotSandbox(w.core, s.id, { name: 'with-ports' });
  assert.deepEqual(snap.ingress, { ports: [{ port: 3000, access: 'public' }, { port: 8080, access: 'token' }], autoResume: false });
  const fromSnap = await createSandbox(w.core, { snapshot: 'with-ports' });
  assert.deepEqual(fromSnap.ingress.ports.map((p) => p.port), [3000, 8080]);
  assert.notEqual(await sandboxAccessToken(w.core, fromSnap.id), token);
  const replaced = await createSandbox(w.core, { snapshot: 'with-ports', ports: [9000] });
  assert.deepEqual(replaced.ingress, { ports: [{ port: 9000, access: 'token' }], autoResume: null });
  const again = await createTestWorld({ ingress: ENDPOINT }, w);
  assert.equal(await sandboxAccessToken(again.core, s.id), token);
  assert.deepEqual((await again.store.getSandbox(s.id))?.ingress.ports.length, 2);
  await again.close();
});

test('tokens: 256 bits, format, constant-time comparison', () => {
  const a = newAccessToken((n) => new Uint8Array(n).fill(1));
  assert.ok(isWellFormedToken(a));
  assert.equal(a.length, 4 + 43);
  assert.ok(!isWellFormedToken('rit_short'));
  assert.ok(!isWellFormedToken(`${a}x`));
  assert.ok(tokensEqual(a, a));
  assert.ok(!tokensEqual(a, newAccessToken((n) => new Uint8Array(n).fill(2))));
  assert.ok(!tokensEqual('x', a));
});

test('a paused sandbox wakes once for concurrent requests; autoResume off answers SANDBOX_PAUSED', async () => {
  const s = await createSandbox(w.core, { ports: [3000] });
  await pauseSandbox(w.core, s.id);
  let resumes = 0;
  const off = w.core.events.onState((e) => {
    if (e.sandboxId === s.id && e.to === 'resuming') resumes += 1;
  });
  const woken = await Promise.all([1, 2, 3].map(() => wakeForIngress(w.core, s.id, 30_000)));
  off();
  assert.equal(resumes, 1, 'one resume shared by three requests');
  assert.ok(woken.every((r) => r.record.state === 'running' && r.woke));
  assert.equal((await wakeForIngress(w.core, s.id, 30_000)).woke, false, 'running: nothing to wake');
  await setAutoResume(w.core, s.id, false);
  await pauseSandbox(w.core, s.id);
  await assert.rejects(wakeForIngress(w.core, s.id, 30_000), { code: 'SANDBOX_PAUSED' });
  assert.equal((await w.store.getSandbox(s.id))?.state, 'paused');
});

test('listener diagnosis reads /proc/net/tcp{,6} text', () => {
  const header = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n';
  const loop = `${header}   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n`;
  const any = `${header}   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n`;
  const conn = `${header}   0: 0200FE0A:1F90 0100FD0A:9C40 01 00000000:00000000 00:00000000 00000000     0        0 1 1\n`;
  assert.equal(diagnoseListeners([loop, ''], 8080), 'loopback-only');
  assert.equal(diagnoseListeners([any, ''], 8080), 'reachable');
  assert.equal(diagnoseListeners([loop, any], 8080), 'reachable');
  assert.equal(diagnoseListeners([conn, ''], 8080), 'none', 'an established socket is no listener');
  assert.equal(diagnoseListeners([loop], 9090), 'none');
  assert.ok(isLoopbackHex('00000000000000000000000001000000'));
  assert.ok(isLoopbackHex('0000000000000000FFFF00000100007F'));
  assert.ok(!isLoopbackHex('00000000000000000000000000000000'));
});

test('the ingress log: entries newest first, the token parameter never stored, wakes counted once per resume', async () => {
  const s = await createSandbox(w.core, { ports: [3000] });
  const at = w.clock.now();
  for (const [i, path] of ['/a', '/b?x=1'].entries()) {
    w.core.ingressLog.record({ sandboxId: s.id, at: at + i, client: '127.0.0.1', method: 'GET', path, port: 3000, status: 200, bytes: 5, durationMs: 1.5, woke: false });
  }
  w.core.ingressLog.record({ sandboxId: '', at, client: '', method: 'GET', path: '/', port: 3000, status: 200, bytes: 0, durationMs: 0, woke: false });
  await pauseSandbox(w.core, s.id);
  await Promise.all([1, 2].map(() => wakeForIngress(w.core, s.id, 30_000)));
  const log = await getIngressLog(w.core, s.id);
  assert.deepEqual(log.entries.map((e) => e.path), ['/b?x=1', '/a']);
  assert.equal(log.wakeups, 1, 'two requests shared one wake');
  assert.ok(log.lastWakeAt);
  assert.equal(w.core.ingressLog.stats().dropped, 1, 'the malformed entry was dropped');
  await killSandbox(w.core, s.id);
  await assert.rejects(getIngressLog(w.core, s.id), { code: 'SANDBOX_NOT_FOUND' });
});
