/**
 * HTTP-edge test of `GET /v1/sandboxes/{id}/egress/log`, in-process with `app.inject`, over a core wired to
 * core's FAKE runtime: verdicts go into the core's egress log sink by hand (as enforcement would) and come
 * back through the route (routing, the limit parameter, validation, 404s; NOT enforcement coverage).
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { EgressLogEntry } from '@ramify/contracts';
import { createViaApi, httpTestBed, type HttpTestBed } from './test-support.js';

let bed: HttpTestBed;
beforeEach(async () => {
  bed = await httpTestBed();
});
afterEach(async () => {
  await bed.dispose();
});

const create = (body: Record<string, unknown> = {}) => createViaApi(bed, body);
const getLog = (id: string, query = '') => bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}/egress/log${query}`, headers: bed.auth });

/** Entry `i`: a denied TCP connection to 192.0.2.1, port 1000+i. */
function entry(i: number): EgressLogEntry {
  return { at: new Date(Date.UTC(2024, 4, 1, 10, 0, 0, i)).toISOString(), protocol: 'tcp', destination: '192.0.2.1', port: 1_000 + i, name: null, verdict: 'denied', rule: null };
}

describe('HTTP edge: egress log route (fake runtime)', () => {
  test('verdicts recorded through the sink are listed newest first, right after they are recorded', async () => {
    const sbx = await create({ egress: ['allowed.test', '*.pkg.test:443'] });
    const other = await create();
    const dns: EgressLogEntry = { at: '2024-05-01T09:59:59.000Z', protocol: 'dns', destination: '', port: null, name: 'denied.test', verdict: 'denied', rule: null };
    const allowed: EgressLogEntry = { at: '2024-05-01T09:59:59.500Z', protocol: 'tcp', destination: '198.51.100.7', port: 443, name: 'a.pkg.test', verdict: 'allowed', rule: '*.pkg.test:443' };
    const sink = bed.world.core.egressLog;
    sink.record({ sandboxId: sbx.id, ...dns });
    sink.record({ sandboxId: other.id, ...entry(0) });
    sink.record({ sandboxId: sbx.id, ...allowed });

    const res = await getLog(sbx.id);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { entries: [allowed, dns] });
    assert.deepEqual((await getLog(other.id)).json(), { entries: [entry(0)] });
  });

  test('?limit=N returns the newest N (default 100); a limit outside 1-1000 is a 400', async () => {
    const sbx = await create();
    for (let i = 0; i < 120; i += 1) bed.world.core.egressLog.record({ sandboxId: sbx.id, ...entry(i) });
    const five = await getLog(sbx.id, '?limit=5');
    assert.equal(five.statusCode, 200, five.body);
    assert.deepEqual(five.json().entries, [119, 118, 117, 116, 115].map(entry));
    assert.equal((await getLog(sbx.id)).json().entries.length, 100);
    assert.equal((await getLog(sbx.id, '?limit=1000')).json().entries.length, 120);
    for (const bad of ['0', '1001', 'x']) {
      const res = await getLog(sbx.id, `?limit=${bad}`);
      assert.equal(res.statusCode, 400, `limit=${bad}: ${res.body}`);
      assert.equal(res.json().error.code, 'VALIDATION_FAILED');
    }
  });

  test('unknown and killed sandboxes are 404; a killed sandbox keeps no log', async () => {
    const missing = await getLog('sbx_missing');
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().error.code, 'SANDBOX_NOT_FOUND');

    const sbx = await create();
    bed.world.core.egressLog.record({ sandboxId: sbx.id, ...entry(1) });
    assert.equal((await getLog(sbx.id)).json().entries.length, 1);
    assert.equal((await bed.app.inject({ method: 'DELETE', url: `/v1/sandboxes/${sbx.id}`, headers: bed.auth })).statusCode, 204);
    assert.equal((await getLog(sbx.id)).statusCode, 404);
    assert.deepEqual(await bed.world.store.listEgressLog(sbx.id, 10), []);
  });
});
