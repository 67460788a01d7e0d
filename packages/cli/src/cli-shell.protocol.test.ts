/**
 * Protocol test of `ramify sandbox shell` without a terminal: the built CLI runs as a child process
 * (stdin a pipe) against the in-test contract fixture. It refuses before calling anything. The shell
 * itself, in a real terminal, is tested in tmux against a real daemon: packages/daemon/src/real-shell-tmux.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useCliFixture } from './test-support/cli-fixture.js';

const cli = useCliFixture('shell');

describe('protocol: ramify sandbox shell', () => {
  test('stdin not a terminal: usage error (exit 2) saying so, and a paused sandbox is not resumed', async () => {
    const id = await cli.newSandbox();
    assert.equal((await cli.ramify(['sandbox', 'pause', id])).code, 0);
    const refused = await cli.ramify(['sandbox', 'shell', '--resume', id], { stdin: 'echo hi\n' });
    assert.equal(refused.code, 2);
    assert.equal(refused.stdout, '');
    assert.match(refused.stderr, /^ramify: VALIDATION_FAILED: stdin is not a terminal: 'ramify sandbox shell' needs one \(for scripts: 'ramify sandbox exec ID -- CMD'/);
    const json = await cli.ramify(['sandbox', 'shell', id, '--json']);
    assert.equal(json.code, 2);
    assert.equal((JSON.parse(json.stderr) as { error: { code: string } }).error.code, 'VALIDATION_FAILED');
    assert.equal((JSON.parse((await cli.ramify(['sandbox', 'get', id, '--json'])).stdout) as { state: string }).state, 'paused');
  });
});
