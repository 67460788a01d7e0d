/**
 * Protocol tests of the built `ramify` CLI: it runs as a child process against the in-test contract
 * fixture (node:http + ws from `@ramify/sdk/testing`), and we check exit codes, `--json` output and
 * error messages. Commands are fixture scripts; no daemon or runtime is involved.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { CommandScript } from '@ramify/sdk/testing';
import { useCliFixture } from './test-support/cli-fixture.js';

const scripts: Record<string, CommandScript> = {
  'sleep-forever': async (ctx) => { await ctx.killed; },
  'die-by-signal': async () => ({ exitCode: null, signal: 'SIGKILL' }),
  'deadline': async () => ({ exitCode: null, signal: 'SIGKILL', error: 'timeout' }),
  'mixed': async (ctx) => { ctx.stdout('out-é'); ctx.stderr('err\n'); return 0; },
};

const cli = useCliFixture('test', { scripts: (cmd) => scripts[cmd] ?? (cmd.startsWith('argv ') ? async (ctx) => { ctx.stdout(ctx.request.cmd); return 0; } : undefined) });
const ramify = cli.ramify;

const newSandbox = cli.newSandbox;

describe('protocol: ramify CLI', () => {
  test('--help lists the commands and exits 0; usage errors exit 2', async () => {
    const help = await ramify(['--help']);
    assert.equal(help.code, 0);
    for (const c of ['serve', 'sandbox', 'template', 'snapshot', 'demo', '--api-url', '--api-key', '--json']) assert.ok(help.stdout.includes(c), c);
    const sub = await ramify(['sandbox', 'files', '--help']);
    for (const c of ['ls', 'cat', 'put', 'get', 'rm', 'mkdir', 'mv']) assert.ok(sub.stdout.includes(c), c);
    assert.equal((await ramify(['bogus'])).code, 2);
    const bad = await ramify(['sandbox', 'create', '--cpu', '99']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--cpu/);
  });

  test('create, list, get: human output and --json', async () => {
    const created = await ramify(['sandbox', 'create', '--json', '-m', 'team=cli', '--timeout', '10m', '-e', 'A=1']);
    assert.equal(created.code, 0, created.stderr);
    const info = JSON.parse(created.stdout) as { id: string; timeoutMs: number; metadata: Record<string, string> };
    assert.equal(info.timeoutMs, 600_000);
    assert.deepEqual(info.metadata, { team: 'cli' });
    const id = await newSandbox();
    assert.match(id, /^sbx_\w+$/);
    const list = await ramify(['--json', 'sandbox', 'list', '-m', 'team=cli']);
    assert.deepEqual((JSON.parse(list.stdout) as { id: string }[]).map((s) => s.id), [info.id]);
    const table = await ramify(['sandbox', 'list']);
    assert.match(table.stdout, /^ID\s+STATE/);
    assert.ok(table.stdout.includes(id));
    const get = await ramify(['sandbox', 'get', id, '--json']);
    assert.equal((JSON.parse(get.stdout) as { state: string }).state, 'running');
  });

  test('errors: code and message on stderr, exit 1; --json gives an error body', async () => {
    const missing = await ramify(['sandbox', 'get', 'sbx_nope']);
    assert.equal(missing.code, 1);
    assert.equal(missing.stdout, '');
    assert.match(missing.stderr, /^ramify: SANDBOX_NOT_FOUND: .*sbx_nope.*\nnext: 'ramify sandbox list' shows the sandboxes you can reach\n$/);
    const json = await ramify(['sandbox', 'pause', 'sbx_nope', '--json']);
    assert.equal(json.code, 1);
    assert.equal((JSON.parse(json.stderr) as { error: { code: string } }).error.code, 'SANDBOX_NOT_FOUND');
    const auth = await ramify(['sandbox', 'list'], { env: { RAMIFY_API_KEY: 'rmf_wrong' } });
    assert.equal(auth.code, 1);
    assert.match(auth.stderr, /UNAUTHORIZED/);
    const down = await ramify(['sandbox', 'list', '--api-url', 'http://127.0.0.1:9']);
    assert.equal(down.code, 1);
    assert.match(down.stderr, /API_UNREACHABLE: .*http:\/\/127\.0\.0\.1:9/);
  });

  test('the API key is read from $RAMIFY_HOME/api-key when the env has none', async () => {
    await writeFile(join(cli.dir, 'api-key'), `${cli.server.apiKey}\n`);
    try {
      const r = await ramify(['sandbox', 'list', '--json'], { env: { RAMIFY_API_KEY: undefined } });
      assert.equal(r.code, 0, r.stderr);
    } finally { await rm(join(cli.dir, 'api-key')); }
  });

  test('exec streams output and exits with the command exit code', async () => {
    const id = await newSandbox();
    const ok = await ramify(['sandbox', 'exec', id, '--', 'mixed']);
    assert.equal(ok.code, 0);
    assert.equal(ok.stdout, 'out-é');
    assert.equal(ok.stderr, 'err\n');
    assert.equal((await ramify(['sandbox', 'exec', id, '--', 'exit 7'])).code, 7);
    const notFound = await ramify(['sandbox', 'exec', id, '--', 'nope']);
    assert.equal(notFound.code, 127);
    assert.match(notFound.stderr, /command not found/);
    assert.equal((await ramify(['sandbox', 'exec', id, '--', 'die-by-signal'])).code, 137);
    assert.equal((await ramify(['sandbox', 'exec', id, '--', 'deadline'])).code, 124);
    const failed = await ramify(['sandbox', 'exec', 'sbx_nope', '--', 'echo hi']);
    assert.equal(failed.code, 125);
    assert.match(failed.stderr, /SANDBOX_NOT_FOUND/);
    const quoted = await ramify(['sandbox', 'exec', id, '--', 'argv', "it's", 'a b', '-x']);
    assert.equal(quoted.stdout, `argv 'it'\\''s' 'a b' -x`);
    const piped = await ramify(['sandbox', 'exec', '-i', id, '--', 'cat'], { stdin: 'from host\n' });
    assert.equal(piped.stdout, 'from host\n');
    const passThrough = await ramify(['sandbox', 'exec', id, '--', 'argv', '--json', '--api-url', 'x']);
    assert.equal(passThrough.stdout, 'argv --json --api-url x');
    const json = await ramify(['sandbox', 'exec', id, '--json', '--', 'exit 3']);
    assert.equal(json.code, 3);
    assert.equal((JSON.parse(json.stdout) as { exitCode: number }).exitCode, 3);
  });

  test('lifecycle commands: pause, resume, fork, snapshot, timeout, kill, snapshot list/rm', async () => {
    const id = await newSandbox();
    assert.match((await ramify(['sandbox', 'pause', id])).stdout, /paused/);
    assert.equal((await ramify(['sandbox', 'pause', id])).code, 1);
    assert.match((await ramify(['sandbox', 'resume', id, '--timeout', '1h'])).stdout, /running/);
    const forks = await ramify(['sandbox', 'fork', id, '-n', '3']);
    assert.equal(forks.stdout.trim().split('\n').length, 3);
    const snap = (await ramify(['sandbox', 'snapshot', id, '--name', 'cli-snap'])).stdout.trim();
    const snaps = JSON.parse((await ramify(['snapshot', 'list', '--json'])).stdout) as { id: string; name: string }[];
    assert.ok(snaps.some((s) => s.id === snap && s.name === 'cli-snap'));
    assert.equal((await ramify(['snapshot', 'rm', snap])).code, 0);
    assert.equal((await ramify(['snapshot', 'rm', snap])).code, 1);
    const t = await ramify(['sandbox', 'timeout', id, '90s', '--json']);
    assert.equal((JSON.parse(t.stdout) as { timeoutMs: number }).timeoutMs, 90_000);
    assert.equal((await ramify(['sandbox', 'kill', id, ...forks.stdout.trim().split('\n')])).code, 0);
    const killed = JSON.parse((await ramify(['sandbox', 'get', id, '--json'])).stdout) as { state: string };
    assert.equal(killed.state, 'killed');
  });

  test('files: put/get stream binary files exactly; cat, ls, mv, mkdir, rm', async () => {
    const id = await newSandbox();
    const data = randomBytes(700_000);
    await writeFile(join(cli.dir, 'in.bin'), data);
    const put = await ramify(['sandbox', 'files', 'put', id, join(cli.dir, 'in.bin'), '/data/in.bin', '--json']);
    assert.equal(put.code, 0, put.stderr);
    assert.equal((JSON.parse(put.stdout) as { size: number }).size, data.length);
    assert.equal((await ramify(['sandbox', 'files', 'get', id, '/data/in.bin', join(cli.dir, 'out.bin')])).code, 0);
    assert.ok(data.equals(await readFile(join(cli.dir, 'out.bin'))));
    assert.ok(data.equals((await ramify(['sandbox', 'files', 'cat', id, '/data/in.bin'])).stdoutBytes));
    assert.equal((await ramify(['sandbox', 'files', 'put', id, '-', '/data/t.txt'], { stdin: 'typed' })).code, 0);
    assert.equal((await ramify(['sandbox', 'files', 'mv', id, '/data/t.txt', '/data/u.txt'])).code, 0);
    assert.equal((await ramify(['sandbox', 'files', 'mkdir', id, '/data/sub'])).code, 0);
    const ls = JSON.parse((await ramify(['sandbox', 'files', 'ls', id, '/data', '--json'])).stdout) as { name: string }[];
    assert.deepEqual(ls.map((e) => e.name), ['in.bin', 'sub', 'u.txt']);
    assert.match((await ramify(['sandbox', 'files', 'ls', id, '/data'])).stdout, /^MODE\s+SIZE/);
    assert.equal((await ramify(['sandbox', 'files', 'rm', id, '/data/u.txt'])).code, 0);
    const gone = await ramify(['sandbox', 'files', 'cat', id, '/data/u.txt']);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /FILE_NOT_FOUND/);
    const noLocal = await ramify(['sandbox', 'files', 'put', id, join(cli.dir, 'absent'), '/x']);
    assert.equal(noLocal.code, 1);
    assert.equal(noLocal.stderr, `ramify: FILE_NOT_FOUND: local file ${join(cli.dir, 'absent')} does not exist\n`);
  });

  test('files put/get behave like cp: a directory destination gets the file name; one line on success', async () => {
    const id = await newSandbox();
    await writeFile(join(cli.dir, 'local.txt'), 'hello world\n');
    const slash = await ramify(['sandbox', 'files', 'put', id, join(cli.dir, 'local.txt'), '/root/']);
    assert.equal(slash.code, 0, slash.stderr);
    assert.equal(slash.stdout, 'uploaded 12 bytes to /root/local.txt\n');
    await ramify(['sandbox', 'files', 'rm', id, '/root/local.txt']);
    const existingDir = await ramify(['sandbox', 'files', 'put', id, join(cli.dir, 'local.txt'), '/root']);
    assert.equal(existingDir.stdout, 'uploaded 12 bytes to /root/local.txt\n');
    const renamed = await ramify(['sandbox', 'files', 'put', id, join(cli.dir, 'local.txt'), '/root/other.txt', '--json']);
    assert.equal((JSON.parse(renamed.stdout) as { path: string }).path, '/root/other.txt');
    assert.equal((await ramify(['sandbox', 'files', 'cat', id, '/root/local.txt'])).stdout, 'hello world\n');
    const stdinToDir = await ramify(['sandbox', 'files', 'put', id, '-', '/root/'], { stdin: 'x' });
    assert.equal(stdinToDir.code, 1);
    assert.match(stdinToDir.stderr, /IS_A_DIRECTORY: \/root\/ is a directory/);

    const cwd = join(cli.dir, 'cwd');
    await mkdir(join(cwd, 'sub'), { recursive: true });
    const get = await ramify(['sandbox', 'files', 'get', id, '/root/other.txt'], { cwd });
    assert.equal(get.code, 0, get.stderr);
    assert.equal(get.stdout, 'downloaded 12 bytes to other.txt\n');
    assert.equal(await readFile(join(cwd, 'other.txt'), 'utf8'), 'hello world\n');
    const intoDir = await ramify(['sandbox', 'files', 'get', id, '/root/other.txt', 'sub', '--json'], { cwd });
    assert.deepEqual(JSON.parse(intoDir.stdout), { remote: '/root/other.txt', local: join('sub', 'other.txt'), size: 12 });
    assert.equal(await readFile(join(cwd, 'sub', 'other.txt'), 'utf8'), 'hello world\n');
    const noDir = await ramify(['sandbox', 'files', 'get', id, '/root/other.txt', join(cli.dir, 'nope', 'x.txt')]);
    assert.equal(noDir.code, 1);
    assert.match(noDir.stderr, /^ramify: FILE_NOT_FOUND: local directory .*nope does not exist/);
    const help = await ramify(['sandbox', 'files', 'get', '--help']);
    assert.match(help.stdout, /current\s+directory under its own name/);
  });

  test('--json: usage errors are error bodies on stderr (exit 2); without it, commander text and a hint', async () => {
    for (const args of [['--json', 'sandbox', 'fork', 'sbx_x', '-n', '0'], ['sandbox', 'fork', 'sbx_x', '-n', '0', '--json'], ['--json', 'bogus'], ['--json', 'sandbox', 'get']]) {
      const r = await ramify(args);
      assert.equal(r.code, 2, args.join(' '));
      assert.equal(r.stdout, '');
      const body = JSON.parse(r.stderr) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'VALIDATION_FAILED');
      assert.ok(body.error.message.length > 0 && !body.error.message.startsWith('error:'), body.error.message);
    }
    const fork = JSON.parse((await ramify(['--json', 'sandbox', 'fork', 'sbx_x', '-n', '0'])).stderr) as { error: { message: string } };
    assert.match(fork.error.message, /--count.*expected a whole number from 1 to 64/);
    const human = await ramify(['sandbox', 'fork', 'sbx_x', '-n', '0']);
    assert.equal(human.code, 2);
    assert.match(human.stderr, /^error: option .*--count.*\n\(run with --help for usage\)\n$/);
  });

  test('sandbox list and get show template names (--json keeps the API ids); list --all includes killed', async () => {
    const id = await newSandbox();
    const table = await ramify(['sandbox', 'list']);
    const row = table.stdout.split('\n').find((l) => l.startsWith(id)) ?? '';
    assert.match(row, /\srunning\s+gvisor\s+base\s/);
    assert.ok(!table.stdout.includes('tpl_base'));
    assert.match((await ramify(['sandbox', 'get', id])).stdout, /^template:\s+base$/m);
    assert.equal((JSON.parse((await ramify(['sandbox', 'get', id, '--json'])).stdout) as { templateId: string }).templateId, 'tpl_base');
    assert.ok((JSON.parse((await ramify(['sandbox', 'list', '--json'])).stdout) as { templateId: string }[]).every((s) => s.templateId.startsWith('tpl_')));

    assert.equal((await ramify(['sandbox', 'kill', id])).code, 0);
    assert.ok(!(await ramify(['sandbox', 'list'])).stdout.includes(id));
    const all = await ramify(['sandbox', 'list', '--all']);
    assert.match(all.stdout, new RegExp(`^${id}\\s+killed\\s`, 'm'));
    const states = await ramify(['sandbox', 'list', '--state', 'killed', '--json']);
    assert.deepEqual((JSON.parse(states.stdout) as { state: string }[]).map((s) => s.state).filter((s) => s !== 'killed'), []);
    const both = await ramify(['sandbox', 'list', '--all', '--state', 'running']);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /cannot be used with/);
    const badState = await ramify(['sandbox', 'list', '--state', 'sleeping']);
    assert.equal(badState.code, 2);
    assert.match(badState.stderr, /expected one of: creating/);
  });

  test('template build: inlines source files, renders progress, --json streams NDJSON events', async () => {
    await writeFile(join(cli.dir, 'app.py'), 'print(1)\n');
    await writeFile(join(cli.dir, 'spec.yaml'), 'name: clitest\npackages: [python3]\nfiles:\n  - path: /app.py\n    source: app.py\nrun:\n  - echo hi\n');
    const human = await ramify(['template', 'build', join(cli.dir, 'spec.yaml')]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stderr, /\[1\/4\] base\n\[2\/4\] packages\n\[3\/4\] file \/app.py\n\[4\/4\] echo hi\n/);
    assert.match(human.stdout, /name:\s+clitest/);
    const json = await ramify(['template', 'build', join(cli.dir, 'spec.yaml'), '--json']);
    assert.equal(json.code, 0, `exit ${json.code}; stderr: ${json.stderr}; stdout: ${json.stdout}`);
    const events = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; cached?: boolean });
    assert.equal(events.at(-1)?.type, 'done');
    assert.ok(events.filter((e) => e.type === 'step').every((e) => e.cached === true));
    const list = JSON.parse((await ramify(['template', 'list', '--json'])).stdout) as { name: string }[];
    assert.ok(list.some((t) => t.name === 'clitest'));
    const missing = await ramify(['template', 'build', './missing.yaml'], { cwd: cli.dir });
    assert.equal(missing.code, 1);
    assert.equal(missing.stderr, 'ramify: FILE_NOT_FOUND: template spec ./missing.yaml does not exist\n');
    await writeFile(join(cli.dir, 'nosource.yaml'), 'name: nosource\nfiles:\n  - path: /x\n    source: gone.txt\n');
    const noSource = await ramify(['template', 'build', join(cli.dir, 'nosource.yaml')]);
    assert.equal(noSource.code, 1);
    assert.match(noSource.stderr, /^ramify: FILE_NOT_FOUND: .*nosource\.yaml: files\[0\]\.source: gone\.txt \(.*gone\.txt\) does not exist\n$/);
    await writeFile(join(cli.dir, 'bad.yaml'), 'name: Not Valid\n');
    const bad = await ramify(['template', 'build', join(cli.dir, 'bad.yaml')]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /VALIDATION_FAILED: .*name/);
    await writeFile(join(cli.dir, 'fail.yaml'), 'name: failing\nrun:\n  - fail here\n');
    const failing = await ramify(['template', 'build', join(cli.dir, 'fail.yaml'), '--json']);
    assert.equal(failing.code, 1);
    assert.equal((JSON.parse(failing.stderr) as { error: { code: string } }).error.code, 'VALIDATION_FAILED');
  });
});
