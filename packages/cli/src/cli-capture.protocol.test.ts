/**
 * Protocol tests of what `ramify sandbox exec` says about a result cut at the daemon's limit: the built
 * CLI runs as a child process against the in-test contract fixture, whose limit is a few bytes and whose
 * "processes" are scripts. Streamed output is never cut; `--json` has `truncated` and `capture`, and a
 * note on stderr says what was cut. Also the `serve --max-output-bytes` flag's range.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { CommandResult } from '@ramify/sdk';
import type { CommandScript } from '@ramify/sdk/testing';
import { useCliFixture } from './test-support/cli-fixture.js';

const LIMIT = 4;
const scripts: Record<string, CommandScript> = {
  'long': async (ctx) => { ctx.stdout('0123456789\n'); ctx.stderr('ab'); return 0; },
};

const cli = useCliFixture('capture', { scripts: (cmd) => scripts[cmd], maxOutputBytes: LIMIT });

describe('protocol: ramify sandbox exec and the result limit', () => {
  test('streamed output is whole and says nothing; --json has truncated and capture, and a note on stderr', async () => {
    const id = await cli.newSandbox();
    const streamed = await cli.ramify(['sandbox', 'exec', id, '--', 'long']);
    assert.equal(streamed.code, 0, streamed.stderr);
    assert.equal(streamed.stdout, '0123456789\n');
    assert.equal(streamed.stderr, 'ab');

    const json = await cli.ramify(['sandbox', 'exec', id, '--json', '--', 'long']);
    assert.equal(json.code, 0, json.stderr);
    const result = JSON.parse(json.stdout) as CommandResult;
    assert.equal(result.stdout, '0123');
    assert.equal(result.stderr, 'ab');
    assert.equal(result.truncated, true);
    assert.deepEqual(result.capture, { limitBytes: LIMIT, stdout: { keptBytes: 4, totalBytes: 11 }, stderr: { keptBytes: 2, totalBytes: 2 } });
    const notes = json.stderr.trim().split('\n');
    assert.equal(notes.length, 1, json.stderr);
    assert.match(notes[0], /^ramify: stdout in the result was cut: it holds the first 4 of the 11 bytes written \(the daemon keeps at most 4 bytes .*--max-output-bytes\)/);

    const small = await cli.ramify(['sandbox', 'exec', id, '--json', '--', 'echo hi']);
    assert.equal(small.stderr, '');
    assert.equal((JSON.parse(small.stdout) as CommandResult).truncated, false);
  });

  test('exec --help says how results are cut; serve --max-output-bytes is bounded', async () => {
    assert.match((await cli.ramify(['sandbox', 'exec', '--help'])).stdout, /"truncated": true/);
    assert.match((await cli.ramify(['serve', '--help'])).stdout, /--max-output-bytes <bytes>/);
    const tooBig = await cli.ramify(['serve', '--max-output-bytes', String(41 << 20)]);
    assert.equal(tooBig.code, 2);
    assert.match((await cli.ramify(['serve', '--help'])).stdout, /--warm-pool <spec>/);
    assert.match((await cli.ramify(['serve', '--help'])).stdout, /--webhook-allow-private/);
    const badPool = await cli.ramify(['serve', '--warm-pool', 'base=lots']);
    assert.equal(badPool.code, 2);
    assert.match(badPool.stderr, /'base=lots' is not <template>/);
  });
});
