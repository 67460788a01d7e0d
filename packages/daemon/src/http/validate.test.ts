/**
 * The words of 400 VALIDATION_FAILED, with the contract's real schemas: what is allowed and what was
 * received, once per field, received strings quoted and cut, no zod wording (`received NaN`, `Too big`).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { CreateSandboxRequest, CreateTeamRequest, ForkRequest, ListSandboxesQuery, MAX_BUDGET_VALUE, SandboxState, SetBudgetRequest, SetTimeoutRequest, isRamifyError } from '@ramify/contracts';
import { Sandbox } from '@ramify/sdk';
import type { z } from 'zod';
import { catalogRoutes } from '../routes/catalog.js';
import { createViaApi, httpTestBed } from '../test-support.js';
import { PidParams } from './route.js';
import { validate, type RequestPart } from './validate.js';

const AuditQuery = catalogRoutes.find((r) => r.operation === 'listAudit')?.query as z.ZodType;
const MAX = Number.MAX_SAFE_INTEGER;

/** The VALIDATION_FAILED `validate` throws: its message and `details.issues`. */
function failure(schema: z.ZodType, value: unknown, where: RequestPart): { message: string; issues: Array<{ path: string; message: string }> } {
  try {
    validate(schema, value, where);
  } catch (error) {
    assert.ok(isRamifyError(error) && error.code === 'VALIDATION_FAILED', String(error));
    return { message: error.message, issues: (error.details as { issues: Array<{ path: string; message: string }> }).issues };
  }
  assert.fail(`${JSON.stringify(value)} passed`);
}

describe('validate: plain messages', () => {
  const cases: Array<[string, z.ZodType, unknown, RequestPart, string]> = [
    ['a non-number in a numeric query', AuditQuery, { before: 'abc' }, 'query', "query.before: must be an integer from 1 to 9007199254740991, got 'abc'"],
    ['a fraction where an integer belongs', AuditQuery, { before: '1.5' }, 'query', 'query.before: must be an integer from 1 to 9007199254740991, got 1.5'],
    ['below the range', AuditQuery, { before: '0' }, 'query', 'query.before: must be an integer from 1 to 9007199254740991, got 0'],
    ['2^53: past the range (and the safe integers), said once', AuditQuery, { before: String(2 ** 53) }, 'query', 'query.before: must be an integer from 1 to 9007199254740991, got 9007199254740992'],
    ['an empty query number is quoted as sent, not as 0', ListSandboxesQuery, { limit: '' }, 'query', "query.limit: must be an integer from 1 to 1000, got ''"],
    ['a value not in the list', AuditQuery, { anonymous: 'yes' }, 'query', "query.anonymous: must be one of true, false, got 'yes'"],
    ['an unknown query field', AuditQuery, { colour: 'red' }, 'query', "query: unknown field 'colour' (allowed: limit, sandboxId, before, anonymous)"],
    ['a coerced path number', PidParams, { id: 'sbx_1', pid: 'x' }, 'params', "params.pid: must be an integer from 1 to 9007199254740991, got 'x'"],
    ['a string for a number', CreateSandboxRequest, { memoryMB: '512' }, 'body', "body.memoryMB: must be an integer from 128 to 65536, got the string '512'"],
    ['a number for a string', CreateSandboxRequest, { template: 5 }, 'body', 'body.template: must be a string of 1 to 128 characters, got the number 5'],
    ['a fraction in a body', CreateSandboxRequest, { memoryMB: 1.5 }, 'body', 'body.memoryMB: must be an integer from 128 to 65536, got 1.5'],
    ['a positive() bound reads as its first integer', SetTimeoutRequest, { timeoutMs: 0 }, 'body', 'body.timeoutMs: must be an integer from 1 to 86400000, got 0'],
    ['2^53 in a body: one message, the field\'s own bound', SetTimeoutRequest, { timeoutMs: 2 ** 53 }, 'body', 'body.timeoutMs: must be an integer from 1 to 86400000, got 9007199254740992'],
    ['a missing field', ForkRequest, {}, 'body', 'body.count: required'],
    ['a boolean field', ForkRequest, { count: 1, networks: 'yes' }, 'body', "body.networks: must be true or false, got the string 'yes'"],
    ['an enum in a body', CreateSandboxRequest, { onTimeout: 'explode' }, 'body', "body.onTimeout: must be one of pause, kill, got 'explode'"],
    ['a too-long string names its length, not its text', CreateSandboxRequest, { template: 'x'.repeat(200) }, 'body', 'body.template: must be a string of 1 to 128 characters, got 200 characters'],
    ['an empty string', CreateSandboxRequest, { template: '' }, 'body', 'body.template: must be a string of 1 to 128 characters, got an empty string'],
    ['a too-long array', CreateSandboxRequest, { ports: Array.from({ length: 65 }, (_, i) => 3000 + i) }, 'body', 'body.ports: must be an array of at most 64 items, got 65 items'],
    ['a nested field', CreateTeamRequest, { id: 'acme', quota: { maxRunning: -1 } }, 'body', 'body.quota.maxRunning: must be an integer from 0 to 1000000000, or null, got -1'],
    ['a nullable field says null is allowed', SetBudgetRequest, { cpuSeconds: -1 }, 'body', `body.cpuSeconds: must be a number greater than 0 and at most ${MAX_BUDGET_VALUE}, or null, got -1`],
    ['a nullable integer field, a fraction', SetBudgetRequest, { maxSandboxes: 1.5 }, 'body', `body.maxSandboxes: must be an integer from 1 to ${MAX_BUDGET_VALUE}, or null, got 1.5`],
    ['a nullable field, the wrong kind', SetBudgetRequest, { sandboxSeconds: 'lots' }, 'body', `body.sandboxSeconds: must be a number greater than 0 and at most ${MAX_BUDGET_VALUE}, or null, got the string 'lots'`],
    ['a field that is not nullable does not say null', SetTimeoutRequest, { timeoutMs: null }, 'body', 'body.timeoutMs: must be an integer from 1 to 86400000, got null'],
    ['a nested unknown field', CreateTeamRequest, { id: 'acme', quota: { maxRunnin: 1 } }, 'body', "body.quota: unknown field 'maxRunnin' (allowed: maxRunning, maxMemoryMB, maxForksPerCall)"],
    ['a union no alternative of which fits the kind', CreateSandboxRequest, { egress: 5 }, 'body', 'body.egress: must be an array or an object, got the number 5'],
    ['a union: the alternative the kind fits speaks', CreateSandboxRequest, { egress: { mode: 'bogus' } }, 'body', "body.egress.mode: must be one of open, allowlist, deny-all, got 'bogus'"],
    ["a schema's own message wins", CreateSandboxRequest, { ports: [70000] }, 'body', 'body.ports.0: a port is an integer from 1 to 65535'],
    ["a bad record key carries the key rule's message", CreateSandboxRequest, { envs: { '1a': 'x' } }, 'body', 'body.envs.1a: not an allowed key: environment variable names are [A-Za-z_][A-Za-z0-9_]*'],
    ['a boolean for a number', ForkRequest, { count: true }, 'body', 'body.count: must be an integer from 1 to 64, got true'],
    ['a long string of the wrong type is cut', SetTimeoutRequest, { timeoutMs: '9'.repeat(100) }, 'body', `body.timeoutMs: must be an integer from 1 to 86400000, got the string '${'9'.repeat(40)}...'`],
    ['not an object', ForkRequest, [], 'body', 'body: must be an object, got an array'],
    ['null', ForkRequest, null, 'body', 'body: must be an object, got null'],
  ];
  for (const [name, schema, value, where, message] of cases) {
    test(name, () => {
      const got = failure(schema, value, where);
      assert.equal(got.message, message);
      const colon = message.indexOf(': ');
      assert.deepEqual(got.issues, [{ path: message.slice(0, colon), message: message.slice(colon + 2) }], 'details.issues: one { path, message } per field');
    });
  }

  test('several fields: each once, in order, joined by "; "', () => {
    const got = failure(CreateSandboxRequest, { template: 5, memoryMB: 2 ** 53, colour: 'red' }, 'body');
    assert.deepEqual(got.issues.map((i) => i.path), ['body.template', 'body.memoryMB', 'body']);
    assert.equal(got.message, got.issues.map((i) => `${i.path}: ${i.message}`).join('; '));
  });

  test('what the client sent is quoted and cut to 40 characters: values, unknown keys, record keys', () => {
    const long = `${'x'.repeat(100)}\n"`;
    assert.equal(failure(CreateSandboxRequest, { onTimeout: long }, 'body').message, `body.onTimeout: must be one of pause, kill, got '${'x'.repeat(40)}...'`);
    assert.equal(failure(CreateSandboxRequest, { onTimeout: 'a\nb' }, 'body').message, "body.onTimeout: must be one of pause, kill, got 'a\\nb'", 'control characters escaped');
    const unknown = failure(CreateTeamRequest, { id: 'acme', ['k'.repeat(100)]: 1, a: 1, b: 1, c: 1, d: 1, e: 1 }, 'body').message;
    assert.equal(unknown, `body: unknown fields '${'k'.repeat(40)}...', 'a', 'b', 'c', 'd' and 1 more (allowed: id, quota)`);
    const key = failure(CreateSandboxRequest, { metadata: { ['m'.repeat(300)]: 'v' } }, 'body');
    assert.equal(key.issues[0]?.path, `body.metadata.${'m'.repeat(40)}...`);
  });

  test('many bad fields: the message lists 10 and counts the rest; details list them all (up to 100)', () => {
    const envs = Object.fromEntries(Array.from({ length: 130 }, (_, i) => [`${i}x`, 'v']));
    const got = failure(CreateSandboxRequest, { envs }, 'body');
    assert.equal(got.message.split('; ').length, 11);
    assert.match(got.message, /; and 120 more$/);
    assert.equal(got.issues.length, 100);
  });

  test('a body the raw parser passed through (not JSON) names the Content-Type it needs', () => {
    const message = 'must be application/json to send a JSON body, got none';
    assert.deepEqual(failure(ForkRequest, Readable.from([]), 'body'), { message: `headers.content-type: ${message}`, issues: [{ path: 'headers.content-type', message }] });
  });

  test('good input passes, coerced and defaulted', () => {
    assert.deepEqual(validate(AuditQuery, { before: '5' }, 'query'), { before: 5, anonymous: 'false' });
  });

  test("over HTTP the SDK's error carries the server's message as it is", async () => {
    const bed = await httpTestBed();
    try {
      const apiUrl = await bed.app.listen({ host: '127.0.0.1', port: 0 });
      await assert.rejects(Sandbox.create({ memoryMB: 1.5, apiUrl, apiKey: bed.key }), (error: unknown) => {
        assert.ok(isRamifyError(error));
        assert.deepEqual([error.code, error.message, error.details], ['VALIDATION_FAILED', 'body.memoryMB: must be an integer from 128 to 65536, got 1.5', { issues: [{ path: 'body.memoryMB', message: 'must be an integer from 128 to 65536, got 1.5' }] }]);
        return true;
      });
    } finally {
      await bed.dispose();
    }
  });
});

/**
 * Checks a use-case makes by hand (a state list, a pagination token, a time, a metadata filter) and the
 * JSON parser answer in the schema's layout: 400 VALIDATION_FAILED, `<path>: <what is allowed>, got <what
 * was sent>`, `details.issues` `[{ path, message }]`; `details.field` stays where clients read it.
 */
describe('validate: hand-made checks answer in the same layout over HTTP', () => {
  const long = 'z'.repeat(100);
  const cut = `'${'z'.repeat(40)}...'`;
  const time = 'must be an ISO 8601 time (2025-07-01 or 2025-07-01T12:00:00Z) or ms since the epoch';
  const states = `must be states from ${SandboxState.options.join(', ')}, comma-separated`;
  /** [name, method, url (`{id}`: a sandbox made first), JSON body text, message, details.field]. */
  const cases: Array<[string, 'GET' | 'POST' | 'PATCH', string, string | undefined, string, string | undefined]> = [
    ['an unknown sandbox state', 'GET', '/v1/sandboxes?state=running,bogus', undefined, `query.state: ${states}, got 'bogus'`, 'state'],
    ['a long unknown state is cut', 'GET', `/v1/sandboxes?state=${long}`, undefined, `query.state: ${states}, got ${cut}`, 'state'],
    ['a bad pagination token', 'GET', '/v1/sandboxes?nextToken=garbage', undefined, "query.nextToken: must be the nextToken of a previous page, as given, got 'garbage'", 'nextToken'],
    ['a long bad pagination token is cut', 'GET', `/v1/sandboxes?nextToken=${long}`, undefined, `query.nextToken: must be the nextToken of a previous page, as given, got ${cut}`, 'nextToken'],
    ['a metadata filter with an empty key', 'GET', '/v1/sandboxes?metadata=%3Dv', undefined, "query.metadata: must be key=value pairs joined by & (URL-encoded) with no empty key, got '=v'", 'metadata'],
    ['a usage time that is not a time', 'GET', '/v1/usage?from=notadate', undefined, `query.from: ${time}, got 'notadate'`, 'from'],
    ['a usage window backwards', 'GET', '/v1/usage?from=2025-07-02&to=2025-07-01', undefined, "query.from: must be before to (2025-07-01T00:00:00.000Z), got '2025-07-02'", 'from'],
    ['a metrics time that is not a time', 'GET', '/v1/sandboxes/{id}/metrics?end=soon', undefined, `query.end: ${time}, got 'soon'`, 'end'],
    ['a budget limit of the wrong sign', 'PATCH', '/v1/sandboxes/{id}/budget', '{"cpuSeconds":-1}', `body.cpuSeconds: must be a number greater than 0 and at most ${MAX_BUDGET_VALUE}, or null, got -1`, undefined],
    ['the agent\'s own port', 'POST', '/v1/sandboxes', '{"ports":[{"port":49982}]}', 'body.ports.0.port: must not be 49982, reserved for the Ramify agent inside the sandbox: serve on another port', 'port'],
    ['a port given twice', 'POST', '/v1/sandboxes', '{"ports":[3000,3000]}', 'body.ports.1: must name each port once, got port 3000 again', 'ports'],
    ['a disk size where the runtime has none', 'POST', '/v1/sandboxes', '{"diskSizeMB":4096}', "body.diskSizeMB: the gvisor runtime has no disk of its own (file changes live in the sandbox's memory, within memoryMB); use runtime 'microvm' for a sized disk", 'diskSizeMB'],
    ['a body that is not JSON', 'POST', '/v1/sandboxes', '{"template":', 'body: not valid JSON (Unexpected end of JSON input)', undefined],
    ['a body that is not JSON, another reason', 'POST', '/v1/sandboxes', '{nope}', "body: not valid JSON (Expected property name or '}' in JSON at position 1)", undefined],
    ['JSON with a prototype key', 'POST', '/v1/sandboxes', '{"__proto__":{"x":1}}', 'body: not valid JSON (a __proto__ or constructor.prototype key is not allowed)', undefined],
  ];
  for (const [name, method, url, payload, message, field] of cases) {
    test(name, async () => {
      const bed = await httpTestBed();
      try {
        const path = url.includes('{id}') ? url.replace('{id}', (await createViaApi(bed)).id) : url;
        const res = await bed.app.inject({ method, url: path, headers: { ...bed.auth, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) }, ...(payload === undefined ? {} : { payload }) });
        const error = res.json().error as { code: string; message: string; details: { issues: unknown; field?: string } };
        assert.deepEqual([res.statusCode, error.code, error.message], [400, 'VALIDATION_FAILED', message]);
        const colon = message.indexOf(': ');
        assert.deepEqual(error.details.issues, [{ path: message.slice(0, colon), message: message.slice(colon + 2) }]);
        assert.equal(error.details.field, field, 'details.field as before, where it was given');
      } finally {
        await bed.dispose();
      }
    });
  }

  /** [name, Content-Type (undefined: none sent), body]: a JSON body sent as something else. */
  const notJson: Array<[string, string | undefined, string, string]> = [
    ["text/plain (fetch's default for a string body)", 'text/plain;charset=UTF-8', '{"memoryMB":512}', "'text/plain;charset=UTF-8'"],
    ["curl -d's default", 'application/x-www-form-urlencoded', '{"memoryMB":512}', "'application/x-www-form-urlencoded'"],
    ['nothing (no Content-Type at all)', undefined, '{"memoryMB":512}', 'none'],
    ['a long type is cut', `text/${'p'.repeat(100)}`, '{}', `'text/${'p'.repeat(35)}...'`],
  ];
  for (const [name, type, payload, got] of notJson) {
    test(`a JSON body sent as ${name}: the Content-Type it needs`, async () => {
      const bed = await httpTestBed();
      try {
        const res = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: { ...bed.auth, ...(type === undefined ? {} : { 'content-type': type }) }, payload });
        const error = res.json().error as { code: string; message: string; details: Record<string, unknown> };
        const problem = `must be application/json to send a JSON body, got ${got}`;
        assert.deepEqual([res.statusCode, error.code, error.message], [400, 'VALIDATION_FAILED', `headers.content-type: ${problem}`]);
        assert.deepEqual(error.details, { field: 'content-type', contentType: type ?? null, issues: [{ path: 'headers.content-type', message: problem }] });
      } finally {
        await bed.dispose();
      }
    });
  }

  test('an empty body is no body, whatever its Content-Type', async () => {
    const bed = await httpTestBed();
    try {
      const res = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: { ...bed.auth, 'content-type': 'text/plain' }, payload: '' });
      assert.equal(res.statusCode, 201, res.body);
    } finally {
      await bed.dispose();
    }
  });

  test('a file uploaded as text/plain is stored as sent (raw routes take any type as bytes)', async () => {
    const bed = await httpTestBed();
    try {
      const { id } = await createViaApi(bed);
      const put = await bed.app.inject({ method: 'PUT', url: `/v1/sandboxes/${id}/files?path=/root/notes.txt`, headers: { ...bed.auth, 'content-type': 'text/plain' }, payload: '{"not":"parsed"}' });
      assert.equal(put.statusCode, 200, put.body);
      const got = await bed.app.inject({ method: 'GET', url: `/v1/sandboxes/${id}/files?path=/root/notes.txt`, headers: bed.auth });
      assert.equal(got.body, '{"not":"parsed"}');
    } finally {
      await bed.dispose();
    }
  });

  test('a check not worded as a field yet still answers with details.issues (its field, else request)', async () => {
    const bed = await httpTestBed();
    try {
      const res = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: bed.auth, payload: { egress: { mode: 'allowlist' } } });
      const error = res.json().error as { code: string; message: string; details: { issues: Array<{ path: string; message: string }> } };
      assert.deepEqual([res.statusCode, error.code], [400, 'VALIDATION_FAILED'], error.message);
      assert.equal(error.details.issues.length, 1);
      assert.equal(error.details.issues[0]?.message, error.message);
    } finally {
      await bed.dispose();
    }
  });

  test('an unknown template is named cut, as every received value', async () => {
    const bed = await httpTestBed();
    try {
      const res = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: bed.auth, payload: { template: 't'.repeat(100) } });
      assert.deepEqual([res.statusCode, res.json().error.code, res.json().error.message], [404, 'TEMPLATE_NOT_FOUND', `template '${'t'.repeat(40)}...' not found`]);
    } finally {
      await bed.dispose();
    }
  });
});
