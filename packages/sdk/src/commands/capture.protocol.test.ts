/**
 * Protocol tests of the result capture limit against the in-test contract fixture: the daemon's
 * `maxOutputBytes` arrives in the `started` frame and cuts the CommandResult (never the callbacks);
 * daemons that do not send it get the default. Commands are scripts inside the fixture; no runtime is
 * involved.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_MAX_OUTPUT_BYTES } from '@ramify/contracts';
import { startContractServer, type CommandScript, type ContractServer } from '../testing/contract-server.js';
import { CommandExitError, Sandbox } from '../index.js';

const LIMIT = 8;
/** 3 + 3 + 3 + 4 + 1 bytes: the limit of 8 falls inside the third '€'. */
const TEXT = '€€€😀\n';
const scripts: Record<string, CommandScript> = {
  'long': async (ctx) => { for (const b of Buffer.from(TEXT)) ctx.stdout(Uint8Array.of(b)); ctx.stderr('0123456789'); return 0; },
  'long-fail': async (ctx) => { ctx.stdout(TEXT); return 2; },
};

const open = async (opts: { startedLimit?: 'send' | 'omit' } = {}): Promise<{ server: ContractServer; sbx: Sandbox }> => {
  const server = await startContractServer({ scripts: (cmd) => scripts[cmd], maxOutputBytes: LIMIT, ...opts });
  return { server, sbx: await Sandbox.create({ apiUrl: server.url, apiKey: server.apiKey }) };
};

describe('protocol: the result keeps the head of each stream, up to the daemon\'s maxOutputBytes', () => {
  let server: ContractServer;
  let sbx: Sandbox;
  before(async () => ({ server, sbx } = await open()));
  after(() => server.close());

  test('a foreground run past the limit: truncated, the counts, every byte to the callbacks', async () => {
    const text: string[] = [];
    let bytes = 0;
    const r = await sbx.commands.run('long', { onStdout: (d) => text.push(d), onStdoutBytes: (b) => (bytes += b.byteLength) });
    assert.equal(text.join(''), TEXT, 'the callbacks are not cut');
    assert.equal(bytes, Buffer.byteLength(TEXT));
    assert.equal(r.stdout, '€€', 'the head, without the character the limit fell inside');
    assert.equal(r.stderr, '01234567');
    assert.equal(r.truncated, true);
    assert.deepEqual(r.capture, { limitBytes: LIMIT, stdout: { keptBytes: 6, totalBytes: Buffer.byteLength(TEXT) }, stderr: { keptBytes: 8, totalBytes: 10 } });
  });

  test('a small output says truncated: false with its counts', async () => {
    const r = await sbx.commands.run('echo hi');
    assert.deepEqual(r, { pid: r.pid, exitCode: 0, signal: null, error: null, stdout: 'hi\n', stderr: '', truncated: false,
      capture: { limitBytes: LIMIT, stdout: { keptBytes: 3, totalBytes: 3 }, stderr: { keptBytes: 0, totalBytes: 0 } } });
  });

  test('CommandExitError carries the cut result; a background handle cuts alike', async () => {
    await assert.rejects(sbx.commands.run('long-fail'), (e: unknown) => e instanceof CommandExitError && e.result.truncated && e.stdout === '€€');
    const h = await sbx.commands.run('long', { background: true });
    const r = await h.wait();
    assert.equal(r.truncated, true);
    assert.equal(h.stdout, '€€');
    assert.equal(r.capture.stdout.totalBytes, Buffer.byteLength(TEXT));
  });
});

describe('protocol: daemons that send no limit', () => {
  test('the result keeps up to the default limit', async () => {
    const { server, sbx } = await open({ startedLimit: 'omit' });
    try {
      const r = await sbx.commands.run('long');
      assert.equal(r.stdout, TEXT);
      assert.equal(r.truncated, false);
      assert.equal(r.capture.limitBytes, DEFAULT_MAX_OUTPUT_BYTES);
    } finally {
      await server.close();
    }
  });
});
