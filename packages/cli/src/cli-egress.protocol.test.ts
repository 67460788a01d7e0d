/**
 * Protocol tests of `ramify sandbox egress` and `sandbox create --egress`: the built CLI runs as a child
 * process against the in-test contract fixture (`@ramify/sdk/testing`); exit codes, output and errors.
 * The fixture neither normalises nor enforces rules (the daemon's tests cover that).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useCliFixture } from './test-support/cli-fixture.js';

const cli = useCliFixture('egress');
const ramify = cli.ramify;

describe('protocol: ramify sandbox egress', () => {
  test('create --egress (repeatable), egress get, set, set --open, log', async () => {
    const created = await ramify(['sandbox', 'create', '--egress', 'pypi.org', '--egress', '*.githubusercontent.com:443']);
    assert.equal(created.code, 0, created.stderr);
    const id = created.stdout.trim();

    const got = await ramify(['--json', 'sandbox', 'egress', 'get', id]);
    assert.equal(got.code, 0, got.stderr);
    assert.deepEqual(JSON.parse(got.stdout).rules, ['pypi.org', '*.githubusercontent.com:443']);

    const set = await ramify(['sandbox', 'egress', 'set', id, 'example.com:443', '10.0.0.0/8']);
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /mode:\s+allowlist \(2 rules; everything else denied\)/);
    assert.match(set.stdout, /rules:\n {2}example\.com:443\n {2}10\.0\.0\.0\/8/);

    const open = await ramify(['sandbox', 'egress', 'set', id, '--open']);
    assert.equal(open.code, 0, open.stderr);
    assert.match(open.stdout, /mode:\s+open/);

    const log = await ramify(['sandbox', 'egress', 'log', id, '--limit', '5']);
    assert.equal(log.code, 0, log.stderr);
    assert.equal(log.stdout.trim(), 'no egress log entries');
    assert.equal(cli.server.requests.filter((r) => r.path.endsWith('/egress/log')).at(-1)?.query.limit, '5');
  });

  test('create --deny-all and egress set --deny-all send mode deny-all; get shows it; snapshot get shows what a snapshot recorded', async () => {
    const created = await ramify(['sandbox', 'create', '--deny-all']);
    assert.equal(created.code, 0, created.stderr);
    const id = created.stdout.trim();
    assert.equal(cli.server.state.get(id).egress?.mode, 'deny-all');
    const got = await ramify(['sandbox', 'egress', 'get', id]);
    assert.match(got.stdout, /mode:\s+deny-all \(nothing leaves: no name resolves, no address is reachable\)/);
    assert.doesNotMatch(got.stdout, /rules:/);

    const snap = (await ramify(['sandbox', 'snapshot', id, '--name', 'sealed-cli'])).stdout.trim();
    const shown = await ramify(['snapshot', 'get', 'sealed-cli']);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^egress:\s+deny-all \(nothing leaves/m);
    assert.deepEqual(JSON.parse((await ramify(['--json', 'snapshot', 'get', snap])).stdout).egress, { mode: 'deny-all', rules: [] });
    const listed = (await ramify(['snapshot', 'list'])).stdout;
    assert.match(listed, /EGRESS/);
    assert.match(listed.split('\n').find((l) => l.includes('sealed-cli')) ?? '', /\bdeny-all\b/);

    const set = await ramify(['sandbox', 'egress', 'set', id, 'pypi.org']);
    assert.match(set.stdout, /mode:\s+allowlist \(1 rule; everything else denied\)/);
    const denied = await ramify(['--json', 'sandbox', 'egress', 'set', id, '--deny-all']);
    assert.equal(denied.code, 0, denied.stderr);
    assert.deepEqual([JSON.parse(denied.stdout).mode, JSON.parse(denied.stdout).rules], ['deny-all', []]);
    const allowSnap = (await ramify(['sandbox', 'snapshot', (await ramify(['sandbox', 'create', '--egress', 'pypi.org', '--egress', 'a.example.com'])).stdout.trim(), '--name', 'allow-cli'])).stdout.trim();
    assert.ok(allowSnap);
    assert.match((await ramify(['snapshot', 'get', 'allow-cli'])).stdout, /egress:\s+allowlist \(2 rules[^\n]*\negress rules:\n {2}pypi\.org\n {2}a\.example\.com/);
  });

  test('a refused rule exits 1 naming it; no rules (or rules with --open) is a usage error', async () => {
    const id = (await ramify(['sandbox', 'create'])).stdout.trim();
    const bad = await ramify(['sandbox', 'egress', 'set', id, 'pypi.org', '*.com']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /VALIDATION_FAILED: egress rule 2 '\*\.com'/);
    const badJson = await ramify(['--json', 'sandbox', 'egress', 'set', id, 'pypi.org', '*.com']);
    const body = JSON.parse(badJson.stderr) as { error: { code: string; details?: { rule?: string; index?: number } } };
    assert.deepEqual([body.error.code, body.error.details?.rule, body.error.details?.index], ['VALIDATION_FAILED', '*.com', 1], '--json keeps the error details');
    const none = await ramify(['sandbox', 'egress', 'set', id]);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /give at least one rule, --open to allow all egress, or --deny-all/);
    const both = await ramify(['sandbox', 'egress', 'set', id, 'pypi.org', '--open']);
    assert.equal(both.code, 2);
    const denyAndRules = await ramify(['sandbox', 'egress', 'set', id, 'pypi.org', '--deny-all']);
    assert.equal(denyAndRules.code, 2);
    assert.match(denyAndRules.stderr, /--deny-all lets nothing out and takes no rules/);
    assert.equal((await ramify(['sandbox', 'egress', 'set', id, '--deny-all', '--open'])).code, 2);
    const createBoth = await ramify(['sandbox', 'create', '--deny-all', '--egress', 'pypi.org']);
    assert.equal(createBoth.code, 2, createBoth.stderr);
    const help = await ramify(['sandbox', 'egress', '--help']);
    assert.equal(help.code, 0);
    for (const word of ['set', 'get', 'log', '10.0.0.0/8']) assert.ok(help.stdout.includes(word), word);
  });
});
