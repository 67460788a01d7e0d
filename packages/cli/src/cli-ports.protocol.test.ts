/**
 * Protocol tests of `ramify sandbox url|expose|unexpose|ports|auto-pause`, `sandbox create --port
 * --auto-pause` and `ramify sandbox ingress log`: the built CLI runs as a child process against the in-test
 * contract fixture (`@ramify/sdk/testing`); exit codes, output and errors.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useCliFixture } from './test-support/cli-fixture.js';

const cli = useCliFixture('ports');
const ramify = cli.ramify;

describe('protocol: ramify sandbox url, expose, unexpose, auto-pause, ingress log', () => {
  test('create --port; url prints the URL (--json gives the token); expose --public; unexpose; ports', async () => {
    const id = (await ramify(['sandbox', 'create', '--port', '3000'])).stdout.trim();
    const host = `3000-${id.toLowerCase()}.localhost:7424`;
    const url = await ramify(['sandbox', 'url', id, '3000']);
    assert.equal(url.code, 0, url.stderr);
    assert.equal(url.stdout.trim(), `http://${host}/`);
    assert.match(url.stderr, /ramify_access_token=rit_/, 'a note on stderr says how a browser gets in');
    const json = JSON.parse((await ramify(['--json', 'sandbox', 'url', id, '3000'])).stdout);
    assert.deepEqual(Object.keys(json).sort(), ['host', 'token', 'url']);
    assert.equal(json.host, host);

    const exposed = await ramify(['sandbox', 'expose', id, '8080', '--public']);
    assert.equal(exposed.code, 0, exposed.stderr);
    assert.match(exposed.stdout, /8080-.*\(public\)/);
    assert.equal(cli.server.requests.filter((r) => r.method === 'PUT').at(-1)?.path, `/v1/sandboxes/${id}/ports/8080`);
    assert.equal(JSON.parse((await ramify(['--json', 'sandbox', 'url', id, '8080'])).stdout).token, undefined, 'a public port has no token');
    const ports = await ramify(['sandbox', 'ports', id]);
    assert.match(ports.stdout, /3000\s+token/);
    assert.match(ports.stdout, /8080\s+public/);
    assert.match(ports.stdout, /auto-resume: on/);

    const closed = await ramify(['sandbox', 'unexpose', id, '8080']);
    assert.equal(closed.code, 0, closed.stderr);
    assert.equal(closed.stdout.trim(), 'port 8080 closed');
    const gone = await ramify(['sandbox', 'url', id, '8080']);
    assert.notEqual(gone.code, 0);
    assert.match(gone.stderr, /PORT_NOT_EXPOSED|not exposed/);
  });

  test('bad ports are refused before any request', async () => {
    const id = (await ramify(['sandbox', 'create'])).stdout.trim();
    const before = cli.server.requests.length;
    for (const port of ['0', '70000', 'abc']) {
      const r = await ramify(['sandbox', 'expose', id, port]);
      assert.notEqual(r.code, 0, port);
      assert.match(r.stderr, /not a port/);
    }
    assert.equal(cli.server.requests.length, before, 'nothing was sent');
  });

  test('create --auto-pause 10m; auto-pause set, off, a bad duration; get shows it', async () => {
    const id = (await ramify(['sandbox', 'create', '--auto-pause', '10m'])).stdout.trim();
    assert.deepEqual(cli.server.state.get(id).info.autoPause, { idleMs: 600_000 });
    assert.match((await ramify(['sandbox', 'get', id])).stdout, /auto-pause:\s+after 10m00s idle/);
    const off = (await ramify(['sandbox', 'create', '--auto-pause', 'off'])).stdout.trim();
    assert.equal(cli.server.state.get(off).info.autoPause, null, "create --auto-pause off: none");
    const set = await ramify(['sandbox', 'auto-pause', id, '30s']);
    assert.equal(set.code, 0, set.stderr);
    assert.equal(set.stdout.trim(), 'auto-pause: after 30.0s idle');
    assert.equal((await ramify(['sandbox', 'auto-pause', id, 'off'])).stdout.trim(), 'auto-pause: off');
    assert.equal(cli.server.state.get(id).info.autoPause, null);
    const bad = await ramify(['sandbox', 'auto-pause', id, 'soon']);
    assert.notEqual(bad.code, 0);
    const tooShort = await ramify(['sandbox', 'auto-pause', id, '1s']);
    assert.notEqual(tooShort.code, 0);
    assert.match(tooShort.stderr, /VALIDATION_FAILED|out of range/);
    assert.match((await ramify(['sandbox', 'auto-pause', '--help'])).stdout, /CPU use/);
  });

  test('ingress log: empty table with the wake count; --limit is sent', async () => {
    const id = (await ramify(['sandbox', 'create', '--port', '8000'])).stdout.trim();
    const log = await ramify(['sandbox', 'ingress', 'log', id, '--limit', '3']);
    assert.equal(log.code, 0, log.stderr);
    assert.equal(log.stdout.trim(), 'no ingress log entries\nwake-ups: 0');
    assert.equal(cli.server.requests.filter((r) => r.path.endsWith('/ingress/log')).at(-1)?.query.limit, '3');
    assert.deepEqual(JSON.parse((await ramify(['--json', 'sandbox', 'ingress', 'log', id])).stdout), { entries: [], wakeups: 0, lastWakeAt: null });
  });
});
