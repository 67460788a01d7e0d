/**
 * Conformance: bad input through the raw REST API. Each request gets the right status and an error body
 * `{ error: { code, message } }`, and none of them changes an existing sandbox or creates one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MAX_JSON_BODY_BYTES, type SandboxInfo } from '@ramify/contracts';
import type { Sandbox } from '@ramify/sdk';
import type { SuiteContext } from '../context.js';
import type { RawCallOpts, RawResponse } from '../harness.js';
import { sh } from '../support.js';

/** Assert `res` is an error answer with `status` and (when given) `code`; returns its message. */
function assertError(res: RawResponse, status: number, code?: string): string {
  assert.equal(res.status, status, `expected HTTP ${status}, got ${res.status}: ${res.text.slice(0, 300)}`);
  const error = (res.body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  assert.ok(error, `an error body: ${res.text.slice(0, 300)}`);
  assert.equal(typeof error.code, 'string');
  assert.equal(typeof error.message, 'string');
  assert.ok((error.message as string).length > 0, 'a non-empty message');
  if (code !== undefined) assert.equal(error.code, code, `code of: ${res.text.slice(0, 300)}`);
  return error.message as string;
}

/** Register the `bad input` group. */
export function registerBadInputCases(ctx: SuiteContext): void {
  describe('bad input', () => {
    let witness: Sandbox;
    let witnessBefore: SandboxInfo;
    let idsBefore: string[];
    let appenderPid = 0;
    const call = (method: string, path: string, opts?: RawCallOpts): Promise<RawResponse> => ctx.daemon().call(method, path, opts);
    const witnessPath = (rest = ''): string => `/v1/sandboxes/${witness.sandboxId}${rest}`;

    before(async () => {
      witness = await ctx.create({ metadata: { role: 'witness' } });
      await witness.files.write('/root/witness.txt', 'untouched');
      const handle = await witness.commands.run('sleep 100000', { background: true });
      appenderPid = handle.pid;
      await handle.disconnect();
      witnessBefore = await witness.getInfo();
      idsBefore = (await ctx.daemon().liveSandboxes()).map((s) => s.id).sort();
    });
    after(async () => {
      await ctx.killAll();
    });

    test('unknown template: 404 TEMPLATE_NOT_FOUND', async () => {
      const message = assertError(await call('POST', '/v1/sandboxes', { json: { template: 'rmc-no-such-template', runtime: ctx.target.runtime } }), 404, 'TEMPLATE_NOT_FOUND');
      assert.match(message, /rmc-no-such-template/);
    });

    test('fork count 0 and 1000: 400', async () => {
      assertError(await call('POST', witnessPath('/fork'), { json: { count: 0 } }), 400, 'VALIDATION_FAILED');
      assertError(await call('POST', witnessPath('/fork'), { json: { count: 1000 } }), 400, 'VALIDATION_FAILED');
    });

    test('negative timeoutMs: 400', async () => {
      assertError(await call('POST', '/v1/sandboxes', { json: { timeoutMs: -1000 } }), 400, 'VALIDATION_FAILED');
      assertError(await call('POST', witnessPath('/timeout'), { json: { timeoutMs: -1 } }), 400, 'VALIDATION_FAILED');
      assertError(await call('POST', witnessPath('/commands'), { json: { cmd: 'true', timeoutMs: -5 } }), 400, 'VALIDATION_FAILED');
    });

    test('unknown JSON fields: 400 VALIDATION_FAILED naming the field', async () => {
      const create = assertError(await call('POST', '/v1/sandboxes', { json: { template: 'base', frobnicate: true } }), 400, 'VALIDATION_FAILED');
      assert.match(create, /frobnicate/);
      const fork = assertError(await call('POST', witnessPath('/fork'), { json: { count: 1, turbo: 'yes' } }), 400, 'VALIDATION_FAILED');
      assert.match(fork, /turbo/);
      const cmd = assertError(await call('POST', witnessPath('/commands'), { json: { cmd: 'touch /root/should-not-exist', shell: 'zsh' } }), 400, 'VALIDATION_FAILED');
      assert.match(cmd, /shell/);
    });

    test('missing or wrong API key: 401', async () => {
      assertError(await call('GET', '/v1/sandboxes', { auth: 'none' }), 401, 'UNAUTHORIZED');
      assertError(await call('GET', '/v1/sandboxes', { auth: { bearer: 'rmf_wrong_key_0000000000000000' } }), 401, 'UNAUTHORIZED');
      assertError(await call('DELETE', witnessPath(), { auth: 'none' }), 401, 'UNAUTHORIZED');
      assertError(await call('DELETE', witnessPath(), { auth: { bearer: 'not-even-a-key' } }), 401, 'UNAUTHORIZED');
      assertError(await call('POST', witnessPath('/pause'), { auth: { bearer: `${ctx.daemon().apiKey}x` } }), 401, 'UNAUTHORIZED');
    });

    test('a JSON body over 1 MiB: 413', async () => {
      const cmd = `echo ${'x'.repeat(MAX_JSON_BODY_BYTES + 1024)} > /root/should-not-exist`;
      assertError(await call('POST', witnessPath('/commands'), { rawJson: JSON.stringify({ cmd }) }), 413, 'PAYLOAD_TOO_LARGE');
      assertError(await call('POST', '/v1/sandboxes', { rawJson: JSON.stringify({ metadata: { big: 'y'.repeat(MAX_JSON_BODY_BYTES) } }) }), 413, 'PAYLOAD_TOO_LARGE');
    });

    test('none of it changed the existing sandbox or created one', async () => {
      const now = await witness.getInfo();
      assert.deepEqual(now, witnessBefore);
      assert.deepEqual((await ctx.daemon().liveSandboxes()).map((s) => s.id).sort(), idsBefore);
      assert.equal(await witness.files.read('/root/witness.txt'), 'untouched');
      assert.equal(await witness.files.exists('/root/should-not-exist'), false);
      assert.equal((await witness.commands.list()).find((p) => p.pid === appenderPid)?.running, true);
      assert.equal((await sh(witness, 'echo fine')).trim(), 'fine');
    });
  });
}
