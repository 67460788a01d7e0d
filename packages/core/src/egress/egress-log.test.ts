/**
 * The egress log: core's buffered sink over the real SQLite store, and the `getEgressLog` read path, with
 * FAKE runtime and network (core logic only; the verdicts are recorded by hand, as enforcement would).
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestWorld, type TestWorld } from '../testing/world.js';
import { createSandbox } from '../lifecycle/create.js';
import { forkSandbox } from '../lifecycle/fork.js';
import { killSandbox } from '../lifecycle/kill.js';
import type { EgressVerdict } from '../ports/egress.js';
import type { Logger } from '../ports/logger.js';
import type { EgressLogRecord, Store } from '../ports/store.js';
import { BufferedEgressLog } from './buffered-egress-log.js';
import { getEgressLog } from './egress-log.js';

let w: TestWorld;
beforeEach(async () => {
  w = await createTestWorld();
});
afterEach(async () => {
  await w.dispose();
});

/** Verdict `i` for `sandboxId`: a denied TCP connection to 192.0.2.1, port 1000+i. */
function verdict(sandboxId: string, i: number, overrides: Partial<EgressVerdict> = {}): EgressVerdict {
  return {
    sandboxId, at: new Date(1_700_000_000_000 + i).toISOString(), protocol: 'tcp', destination: '192.0.2.1', port: 1_000 + i,
    name: null, verdict: 'denied', rule: null, ...overrides,
  };
}

/** A logger that keeps its lines. */
function recordingLogger(): Logger & { lines: Array<{ level: string; message: string; fields?: Record<string, unknown> }> } {
  const lines: Array<{ level: string; message: string; fields?: Record<string, unknown> }> = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** Poll the store until `sandboxId` has `count` entries (a background flush; no timing asserted). */
async function waitForEntries(store: Store, sandboxId: string, count: number): Promise<EgressLogRecord[]> {
  for (;;) {
    const entries = await store.listEgressLog(sandboxId, 1000);
    if (entries.length >= count) return entries;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('getEgressLog over the buffered sink (fake runtime, real SQLite)', () => {
  test('a verdict recorded just before the read is in it; newest first; limit applies; fields as the API shows them', async () => {
    const sbx = await createSandbox(w.core, { egress: ['allowed.test', '*.pkg.test:443'] });
    w.core.egressLog.record({ sandboxId: sbx.id, at: '2024-05-01T10:00:00.000Z', protocol: 'dns', destination: '', port: null, name: 'denied.test', verdict: 'denied', rule: null });
    w.core.egressLog.record({ sandboxId: sbx.id, at: '2024-05-01T10:00:01.250Z', protocol: 'tcp', destination: '198.51.100.7', port: 443, name: 'a.pkg.test', verdict: 'allowed', rule: '*.pkg.test:443' });
    const log = await getEgressLog(w.core, sbx.id);
    assert.deepEqual(log, [
      { at: '2024-05-01T10:00:01.250Z', protocol: 'tcp', destination: '198.51.100.7', port: 443, name: 'a.pkg.test', verdict: 'allowed', rule: '*.pkg.test:443' },
      { at: '2024-05-01T10:00:00.000Z', protocol: 'dns', destination: '', port: null, name: 'denied.test', verdict: 'denied', rule: null },
    ]);
    for (let i = 0; i < 150; i += 1) w.core.egressLog.record(verdict(sbx.id, i));
    assert.equal((await getEgressLog(w.core, sbx.id)).length, 100, 'default limit');
    const three = await getEgressLog(w.core, sbx.id, { limit: 3 });
    assert.deepEqual(three.map((e) => e.port), [1149, 1148, 1147]);
    assert.equal((await getEgressLog(w.core, sbx.id, { limit: 5000 })).length, 152, 'clamped to 1000, all 152 there');
    assert.equal((await getEgressLog(w.core, sbx.id, { limit: 0 })).length, 1, 'clamped to 1');
  });

  test('an entry about another sandbox keeps its peer (and network) through the buffer and the store; others have none', async () => {
    const a = await createSandbox(w.core, {});
    const b = await createSandbox(w.core, {});
    w.core.egressLog.record({ sandboxId: a.id, at: '2024-05-01T10:00:00.000Z', protocol: 'tcp', destination: '10.253.0.6', port: 7100, name: 'b.n1.internal', verdict: 'allowed', rule: null, peer: { sandboxId: b.id, network: 'n1' } });
    w.core.egressLog.record({ sandboxId: a.id, at: '2024-05-01T10:00:01.000Z', protocol: 'udp', destination: '10.253.0.10', port: 7100, name: null, verdict: 'denied', rule: null, peer: { sandboxId: 'sbx_other', network: null } });
    const log = await getEgressLog(w.core, a.id);
    assert.deepEqual(log.map((e) => e.peer), [{ sandboxId: 'sbx_other', network: null }, { sandboxId: b.id, network: 'n1' }]);
    w.core.egressLog.record(verdict(a.id, 1));
    assert.equal('peer' in (await getEgressLog(w.core, a.id, { limit: 1 }))[0]!, false);
  });

  test("a fork's verdicts land in its own log, not its parent's", async () => {
    const parent = await createSandbox(w.core, { egress: ['allowed.test'] });
    const [child] = await forkSandbox(w.core, parent.id, { count: 1 });
    assert.ok(child);
    w.core.egressLog.record(verdict(parent.id, 1));
    w.core.egressLog.record(verdict(child.id, 2));
    w.core.egressLog.record(verdict(child.id, 3));
    assert.deepEqual((await getEgressLog(w.core, parent.id)).map((e) => e.port), [1001]);
    assert.deepEqual((await getEgressLog(w.core, child.id)).map((e) => e.port), [1003, 1002]);
  });

  test('a kill deletes the log; verdicts trailing the kill are not stored; killed and unknown are SANDBOX_NOT_FOUND', async () => {
    const sbx = await createSandbox(w.core, {});
    w.core.egressLog.record(verdict(sbx.id, 1));
    assert.equal((await getEgressLog(w.core, sbx.id)).length, 1);
    await killSandbox(w.core, sbx.id);
    w.core.egressLog.record(verdict(sbx.id, 2));
    w.core.egressLog.record(verdict('sbx_missing', 3));
    await w.core.egressLog.flush();
    assert.deepEqual(await w.store.listEgressLog(sbx.id, 10), []);
    for (const id of [sbx.id, 'sbx_missing']) await assert.rejects(getEgressLog(w.core, id), { code: 'SANDBOX_NOT_FOUND' });
  });
});

describe('BufferedEgressLog (real SQLite store)', () => {
  test('pending entries reach the store on their own: after the interval, or at once for a full batch', async () => {
    const sbx = await createSandbox(w.core, {});
    const byTimer = new BufferedEgressLog({ store: w.store, logger: w.core.logger, clock: w.clock, flushIntervalMs: 20 });
    byTimer.record(verdict(sbx.id, 1));
    assert.equal(byTimer.stats().pending, 1);
    await waitForEntries(w.store, sbx.id, 1);
    assert.deepEqual(byTimer.stats(), { pending: 0, stored: 1, dropped: 0 });
    await byTimer.close();

    const byBatch = new BufferedEgressLog({ store: w.store, logger: w.core.logger, clock: w.clock, flushIntervalMs: 3_600_000, batchSize: 3 });
    for (let i = 2; i < 5; i += 1) byBatch.record(verdict(sbx.id, i));
    assert.deepEqual((await waitForEntries(w.store, sbx.id, 4)).map((e) => e.port), [1004, 1003, 1002, 1001]);
    await byBatch.close();
  });

  test('over the buffer cap entries are dropped and counted, with one warning; malformed ones too; a bad time gets the clock', async () => {
    const sbx = await createSandbox(w.core, {});
    const logger = recordingLogger();
    const log = new BufferedEgressLog({ store: w.store, logger, clock: w.clock, flushIntervalMs: 3_600_000, maxPending: 3 });
    for (let i = 0; i < 5; i += 1) log.record(verdict(sbx.id, i));
    log.record(verdict(sbx.id, 9, { protocol: 'sctp' as EgressVerdict['protocol'] }));
    assert.deepEqual(log.stats(), { pending: 3, stored: 0, dropped: 3 });
    await log.flush();
    assert.deepEqual(log.stats(), { pending: 0, stored: 3, dropped: 3 });
    assert.deepEqual((await w.store.listEgressLog(sbx.id, 10)).map((e) => e.port), [1002, 1001, 1000]);
    assert.deepEqual(logger.lines.map((l) => [l.level, l.fields?.dropped]), [['warn', 3]]);

    log.record(verdict(sbx.id, 7, { at: 'not a time', verdict: 'allowed', rule: '*', port: null }));
    await log.flush();
    const [latest] = await w.store.listEgressLog(sbx.id, 1);
    assert.deepEqual(latest, { sandboxId: sbx.id, at: w.clock.now(), protocol: 'tcp', destination: '192.0.2.1', port: null, name: null, verdict: 'allowed', rule: '*' });
    await log.close();
  });

  test('a failing store never reaches the caller: record returns, flush resolves, the error is logged and the batch counted as dropped', async () => {
    const logger = recordingLogger();
    const failing = { appendEgressLog: async (): Promise<number> => { throw new Error('disk full'); } };
    const log = new BufferedEgressLog({ store: failing, logger, clock: w.clock, flushIntervalMs: 3_600_000 });
    log.record(verdict('sbx_any', 1));
    log.record(verdict('sbx_any', 2));
    await log.flush();
    assert.deepEqual(log.stats(), { pending: 0, stored: 0, dropped: 2 });
    assert.equal(logger.lines.length, 1);
    assert.equal(logger.lines[0]?.level, 'error');
    assert.equal(logger.lines[0]?.fields?.error, 'disk full');
    await log.close();
  });

  test('close writes what is pending; later entries are dropped', async () => {
    const sbx = await createSandbox(w.core, {});
    const log = new BufferedEgressLog({ store: w.store, logger: w.core.logger, clock: w.clock, flushIntervalMs: 3_600_000 });
    log.record(verdict(sbx.id, 1));
    await log.close();
    log.record(verdict(sbx.id, 2));
    await log.flush();
    assert.deepEqual((await w.store.listEgressLog(sbx.id, 10)).map((e) => e.port), [1001]);
    assert.deepEqual(log.stats(), { pending: 0, stored: 1, dropped: 1 });
  });
});
