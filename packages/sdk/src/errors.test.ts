/** SDK errors as a JSON log line sees them. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ResultCapture } from '@ramify/contracts';
import { AuthenticationError, CommandExitError, NotUtf8Error, PermissionDeniedError, RamifyError, SandboxNotFoundError, errorFromCode } from './index.js';

test('JSON.stringify of an error keeps its name, code, message and details', () => {
  const plain = JSON.parse(JSON.stringify(new RamifyError('VALIDATION_FAILED', 'bad rule *.com', { rule: '*.com' }))) as Record<string, unknown>;
  assert.deepEqual(plain, { name: 'RamifyError', code: 'VALIDATION_FAILED', message: 'bad rule *.com', details: { rule: '*.com' } });
  const exit = JSON.parse(JSON.stringify(new CommandExitError({ pid: 7, exitCode: 3, signal: null, error: null, ...new ResultCapture(16).result() }))) as Record<string, unknown>;
  assert.equal(exit.code, 'COMMAND_EXIT');
  assert.match(String(exit.message), /pid 7.*exited with code 3/);
});

test('a subclass keeps its own name', () => {
  const err = JSON.parse(JSON.stringify(new SandboxNotFoundError('sbx_x'))) as Record<string, unknown>;
  assert.equal(err.code, 'SANDBOX_NOT_FOUND');
  assert.equal(err.name, 'SandboxNotFoundError');
});

test('errorFromCode builds a NotUtf8Error for NOT_UTF8', () => {
  const err = errorFromCode('NOT_UTF8', "/a.png is not valid UTF-8 text; read it with format: 'bytes'", { path: '/a.png' });
  assert.ok(err instanceof NotUtf8Error && err instanceof RamifyError);
  assert.equal(err.name, 'NotUtf8Error');
  assert.deepEqual(err.details, { path: '/a.png' });
});

test('FORBIDDEN is a PermissionDeniedError (still an AuthenticationError); UNAUTHORIZED an AuthenticationError only', () => {
  const forbidden = errorFromCode('FORBIDDEN', 'listing the audit log of calls without a valid key takes an admin API key of the default team');
  assert.ok(forbidden instanceof PermissionDeniedError && forbidden instanceof AuthenticationError);
  assert.equal(forbidden.name, 'PermissionDeniedError');
  const unauthorized = errorFromCode('UNAUTHORIZED', 'missing or invalid API key');
  assert.ok(unauthorized instanceof AuthenticationError && !(unauthorized instanceof PermissionDeniedError));
});

test('a command killed because the sandbox ran out of memory is COMMAND_OOM and says so', () => {
  const killed = new CommandExitError({ pid: 9, exitCode: null, signal: 'SIGKILL', error: 'oom', ...new ResultCapture(16).result() });
  assert.equal(killed.code, 'COMMAND_OOM');
  assert.equal(killed.error, 'oom');
  assert.match(killed.message, /pid 9\) was killed: the sandbox ran out of memory/);
  const child = new CommandExitError({ pid: 10, exitCode: 137, signal: null, error: 'oom', ...new ResultCapture(16).result() });
  assert.equal(child.code, 'COMMAND_OOM');
  assert.match(child.message, /exited with code 137 after one of its processes was killed: the sandbox ran out of memory/);
});
