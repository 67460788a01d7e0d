/**
 * How the CLI reports an API error: a human reads VALIDATION_FAILED paths without the request part
 * (`body.`, `query.`, `params.`) the API names them by; `--json` prints the API's error unchanged.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { RamifyError } from '@ramify/sdk';
import { reportError, withoutRequestParts, type CliEnv } from './context.js';

/** What `reportError` writes on stderr for `err`, human or `--json`. */
function reported(err: unknown, json: boolean): string {
  const stderr = new PassThrough();
  let text = '';
  stderr.on('data', (chunk: Buffer) => { text += chunk.toString('utf8'); });
  const env = { stdout: new PassThrough(), stderr, stdin: new PassThrough(), exitCode: 0 } as unknown as CliEnv;
  assert.equal(reportError(err, env, json), 1);
  return text;
}

/** A VALIDATION_FAILED as the SDK rebuilds it: the server's message listing `issues`, and the issues. */
function validationFailed(issues: Array<{ path: string; message: string }>): RamifyError {
  return new RamifyError('VALIDATION_FAILED', issues.map((i) => `${i.path}: ${i.message}`).join('; '), { issues });
}

describe('CLI error reports: VALIDATION_FAILED paths', () => {
  const cases: Array<[string, Array<{ path: string; message: string }>, string]> = [
    ['a body field', [{ path: 'body.id', message: "must be a team id, got 'Acme'" }], "id: must be a team id, got 'Acme'"],
    ['the body itself', [{ path: 'body', message: "unknown field 'colour' (allowed: id, quota)" }], "unknown field 'colour' (allowed: id, quota)"],
    ['a nested body field', [{ path: 'body.quota.maxRunning', message: 'must be an integer from 0 to 1000000000, or null, got -1' }], 'quota.maxRunning: must be an integer from 0 to 1000000000, or null, got -1'],
    ['a query field and a path parameter', [{ path: 'query.state', message: "must be states, got 'x'" }, { path: 'params.pid', message: "must be an integer, got 'y'" }], "state: must be states, got 'x'; pid: must be an integer, got 'y'"],
    ['a header keeps its name', [{ path: 'headers.content-type', message: "must be application/json, got 'text/plain'" }], "headers.content-type: must be application/json, got 'text/plain'"],
    ['a received value that looks like a path is left alone', [{ path: 'body.name', message: "must be a name, got 'body.x: y'" }], "name: must be a name, got 'body.x: y'"],
  ];
  for (const [name, issues, human] of cases) {
    test(name, () => {
      const err = validationFailed(issues);
      assert.equal(reported(err, false), `ramify: VALIDATION_FAILED: ${human}\n`);
      assert.deepEqual(JSON.parse(reported(err, true)), { error: { code: 'VALIDATION_FAILED', message: err.message, details: { issues } } }, '--json: the API error as it is');
    });
  }

  test('a message listing fewer issues than the details (10 of 100) keeps its tail', () => {
    const issues = Array.from({ length: 12 }, (_, i) => ({ path: `body.envs.${i}x`, message: 'not an allowed key' }));
    const message = `${issues.slice(0, 10).map((i) => `${i.path}: ${i.message}`).join('; ')}; and 2 more`;
    assert.equal(withoutRequestParts(message, { issues }), `${issues.slice(0, 10).map((i) => `${i.path.slice(5)}: ${i.message}`).join('; ')}; and 2 more`);
  });

  test('an error without issues is printed as it came', () => {
    assert.equal(reported(new RamifyError('SANDBOX_FAILED', "sandbox 'body.x' failed"), false), "ramify: SANDBOX_FAILED: sandbox 'body.x' failed\n");
  });

  test("a not-found error is followed by the command that lists what there is (not with --json)", () => {
    assert.equal(reported(new RamifyError('TEMPLATE_NOT_FOUND', "template 'body.x' not found"), false), "ramify: TEMPLATE_NOT_FOUND: template 'body.x' not found\nnext: 'ramify template list' shows the templates; 'ramify template build' makes one\n");
    assert.equal(JSON.parse(reported(new RamifyError('TEMPLATE_NOT_FOUND', 'x'), true)).error.code, 'TEMPLATE_NOT_FOUND', 'one JSON body');
  });
});
