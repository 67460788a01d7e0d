/**
 * Conformance: commands. Large and binary output arrive byte-exact, UTF-8 split across writes is never
 * corrupted, a result past the capture limit says it was cut (and never splits a character), errors are
 * clear (exit 127, `CWD_NOT_FOUND`, `COMMAND_TIMEOUT`, `PROCESS_EXITED`), a deadline leaves no process
 * behind (children that left the group with `setsid` included), stdin, background handles and
 * re-attaching by pid from another client.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { join } from 'node:path';
import { CommandExitError, DEFAULT_MAX_OUTPUT_BYTES, InvalidStateError, Sandbox, type CommandResult } from '@ramify/sdk';
import type { SuiteContext } from '../context.js';
import { rejectsWithCode, sh, sha256Chunks, sha256File, waitFor, writeRandomFile } from '../support.js';

const MiB = 1 << 20;

/** Known bug, see the case. */
/** Register the `commands` group. */
export function registerCommandCases(ctx: SuiteContext): void {
  describe('commands', () => {
    let sbx: Sandbox;
    before(async () => {
      sbx = await ctx.create();
    });
    after(() => ctx.killAll());

    const thirtyMb = '30 MB of stdout arrive byte-exact through a streaming run';
    test(thirtyMb, ctx.caseOptions(thirtyMb, { extended: true }), async () => {
      const size = 30_000_000;
      const local = join(ctx.daemon().tempDir, 'stdout-source.bin');
      await writeRandomFile(local, 32 * MiB);
      const expected = await sha256File(local, size);
      await sbx.files.write('/tmp/stdout-source.bin', createReadStream(local));
      const hash = createHash('sha256');
      let received = 0;
      const result = await sbx.commands.run(`head -c ${size} /tmp/stdout-source.bin`, {
        timeoutMs: 0,
        onStdoutBytes: (chunk) => {
          hash.update(chunk);
          received += chunk.byteLength;
        },
      });
      assert.equal(result.exitCode, 0);
      assert.equal(received, size);
      assert.equal(hash.digest('hex'), expected);
      await sh(sbx, 'rm -f /tmp/stdout-source.bin');
    });

    test('random binary output of a background command arrives exact across a disconnect and re-attach', async () => {
      const half = MiB;
      const expected = (await sh(sbx, `head -c ${2 * half} /dev/urandom > /tmp/bin.dat && sha256sum /tmp/bin.dat`)).split(/\s+/)[0];
      const first: Uint8Array[] = [];
      let firstBytes = 0;
      let stopped = false;
      const handle = await sbx.commands.run(`head -c ${half} /tmp/bin.dat; sleep 1; tail -c +${half + 1} /tmp/bin.dat`, {
        background: true,
        onStdoutBytes: (chunk) => {
          if (stopped) return;
          first.push(Uint8Array.from(chunk));
          firstBytes += chunk.byteLength;
        },
      });
      await waitFor(async () => firstBytes >= half, { timeoutMs: 60_000, what: 'the first half of the output' });
      await handle.disconnect();
      stopped = true;
      const offset = firstBytes;

      const rest: Uint8Array[] = [];
      const resumed = await sbx.commands.connect(handle.pid, { from: { stdout: offset, stderr: 0 }, onStdoutBytes: (c) => rest.push(Uint8Array.from(c)) });
      await resumed.wait();
      assert.equal(sha256Chunks([...first, ...rest]), expected, `bytes 0..${offset} from the first attach + the rest from the re-attach`);

      const replay: Uint8Array[] = [];
      const again = await sbx.commands.connect(handle.pid, { onStdoutBytes: (c) => replay.push(Uint8Array.from(c)) });
      await again.wait();
      assert.equal(sha256Chunks(replay), expected, 'a full replay from offset 0');
    });

    test('multi-byte UTF-8 split across writes is never corrupted', async () => {
      const pieces = `printf '\\xe2\\x82'; sleep 0.3; printf '\\xac\\xf0\\x9f'; sleep 0.3; printf '\\x98\\x80'; sleep 0.3; printf ' ok\\n'`;
      const out: string[] = [];
      const err: string[] = [];
      const result = await sbx.commands.run(`${pieces}; { ${pieces}; } >&2`, { onStdout: (d) => out.push(d), onStderr: (d) => err.push(d) });
      const expected = '€😀 ok\n';
      assert.equal(result.stdout, expected);
      assert.equal(result.stderr, expected);
      assert.equal(out.join(''), expected);
      assert.equal(err.join(''), expected);
      assert.ok(![...out, ...err].some((piece) => piece.includes('\uFFFD')), `no replacement character in ${JSON.stringify([...out, ...err])}`);
    });

    test('an unknown command exits 127 with bash\'s "command not found"', async () => {
      let caught: unknown;
      await sbx.commands.run('rmc-no-such-command --flag').catch((e: unknown) => { caught = e; });
      assert.ok(caught instanceof CommandExitError, `expected CommandExitError, got ${String(caught)}`);
      assert.equal(caught.exitCode, 127);
      assert.match(caught.stderr, /rmc-no-such-command: command not found/);
    });

    test('a missing cwd fails clearly with CWD_NOT_FOUND', async () => {
      const fg = await rejectsWithCode(sbx.commands.run('pwd', { cwd: '/no/such/dir' }), 'CWD_NOT_FOUND');
      assert.match(fg.message, /\/no\/such\/dir/);
      const bg = await rejectsWithCode(sbx.commands.run('pwd', { cwd: '/no/such/dir', background: true }), 'CWD_NOT_FOUND');
      assert.match(bg.message, /\/no\/such\/dir/);
      assert.equal((await sh(sbx, 'pwd', { cwd: '/tmp' })).trim(), '/tmp');
    });

    test('a command deadline kills the whole tree, setsid grandchildren included', ctx.caseOptions('a command deadline kills the whole tree, setsid grandchildren included', { extended: true }), async () => {
      const tree = 'sleep 3101 & ( setsid sleep 3102 & wait ) & wait';
      const ps = async (): Promise<string> => sh(sbx, 'ps -eo pid,args');
      // Background: see the tree alive first, then the deadline fires.
      const handle = await sbx.commands.run(tree, { background: true, timeoutMs: 6_000 });
      await waitFor(async () => { const out = await ps(); return out.includes('sleep 3101') && out.includes('sleep 3102'); }, { timeoutMs: 5_000, what: 'both sleeps running' });
      let caught: unknown;
      await handle.wait().catch((e: unknown) => { caught = e; });
      assert.ok(caught instanceof CommandExitError, `expected CommandExitError, got ${String(caught)}`);
      assert.equal(caught.code, 'COMMAND_TIMEOUT');
      assert.equal(caught.error, 'timeout');
      assert.doesNotMatch(await ps(), /sleep 310[12]/, 'nothing of the tree is left');
      // Foreground.
      const fg = await rejectsWithCode(sbx.commands.run(tree.replace(/310/g, '320'), { timeoutMs: 2_000 }), 'COMMAND_TIMEOUT');
      assert.ok(fg instanceof CommandExitError && fg.error === 'timeout');
      assert.doesNotMatch(await ps(), /sleep 320[12]/, 'nothing of the foreground tree is left');
    });

    test('stdin: data, send and close', async () => {
      const r = await sbx.commands.run('wc -c', { stdin: 'abcdef' });
      assert.equal(r.stdout.trim(), '6');
      const handle = await sbx.commands.run('cat; echo "[eof]"', { background: true, stdin: true });
      await handle.sendStdin('hello ');
      await handle.sendStdin(new TextEncoder().encode('wörld\n'));
      await sbx.commands.sendStdin(handle.pid, 'again\n');
      await handle.closeStdin();
      assert.equal((await handle.wait()).stdout, 'hello wörld\nagain\n[eof]\n');
    });

    test('background handles: wait for success and failure, kill', async () => {
      const ok = await sbx.commands.run('echo bg-ok', { background: true });
      assert.equal((await ok.wait()).stdout, 'bg-ok\n');
      const bad = await sbx.commands.run('echo oops >&2; exit 3', { background: true });
      const failed = await bad.wait().catch((e: unknown) => e);
      assert.ok(failed instanceof CommandExitError);
      assert.equal(failed.exitCode, 3);
      assert.equal(failed.stderr, 'oops\n');
      const long = await sbx.commands.run('sleep 1000', { background: true });
      assert.equal(await long.kill(), true);
      const killed = await long.wait().catch((e: unknown) => e);
      assert.ok(killed instanceof CommandExitError);
      assert.equal(killed.signal, 'SIGKILL');
    });

    const cut = 'a foreground result past the 32 MiB limit says truncated with the counts (REST and SDK); a small one says truncated: false';
    test(cut, ctx.caseOptions(cut, { extended: true }), async () => {
      const limit = DEFAULT_MAX_OUTPUT_BYTES;
      const total = 40 * MiB;
      const cmd = `head -c ${total} /dev/zero | tr '\\0' a`;
      const expected = { limitBytes: limit, stdout: { keptBytes: limit, totalBytes: total }, stderr: { keptBytes: 0, totalBytes: 0 } };
      const rest = await ctx.daemon().call('POST', `/v1/sandboxes/${sbx.sandboxId}/commands`, { json: { cmd, timeoutMs: 0 } });
      assert.equal(rest.status, 200, rest.text.slice(0, 300));
      const result = rest.body as CommandResult;
      assert.equal(result.exitCode, 0);
      assert.equal(result.truncated, true);
      assert.deepEqual(result.capture, expected);
      assert.equal(result.stdout.length, limit);
      assert.ok(/^a*$/.test(result.stdout), 'the head is what the command printed');

      let streamed = 0;
      const viaSdk = await sbx.commands.run(cmd, { timeoutMs: 0, onStdoutBytes: (chunk) => { streamed += chunk.byteLength; } });
      assert.equal(streamed, total, 'the stream to the callbacks is never cut');
      assert.equal(viaSdk.truncated, true);
      assert.deepEqual(viaSdk.capture, expected);
      assert.equal(viaSdk.stdout.length, limit);

      // The limit falls inside a 3-byte character: it is left out whole, no U+FFFD.
      const split = await ctx.daemon().call('POST', `/v1/sandboxes/${sbx.sandboxId}/commands`, {
        json: { cmd: `head -c ${limit - 1} /dev/zero | tr '\\0' a; printf '\\xe2\\x82\\xac'`, timeoutMs: 0 },
      });
      const splitResult = split.body as CommandResult;
      assert.deepEqual(splitResult.capture.stdout, { keptBytes: limit - 1, totalBytes: limit + 2 });
      assert.equal(splitResult.stdout.length, limit - 1);
      assert.ok(!splitResult.stdout.includes('\uFFFD'));

      const small = await ctx.daemon().call('POST', `/v1/sandboxes/${sbx.sandboxId}/commands`, { json: { cmd: 'echo hi' } });
      assert.equal((small.body as CommandResult).truncated, false);
      assert.deepEqual((small.body as CommandResult).capture, { limitBytes: limit, stdout: { keptBytes: 3, totalBytes: 3 }, stderr: { keptBytes: 0, totalBytes: 0 } });
      const smallSdk = await sbx.commands.run('echo hi >&2');
      assert.equal(smallSdk.truncated, false);
      assert.deepEqual(smallSdk.capture.stderr, { keptBytes: 3, totalBytes: 3 });
    });

    test('stdin to a process that has exited is PROCESS_EXITED with its exit code (REST and SDK)', async () => {
      const handle = await sbx.commands.run('exit 3', { background: true, stdin: true });
      await handle.wait().catch(() => undefined);
      const err = await rejectsWithCode(sbx.commands.sendStdin(handle.pid, 'late'), 'PROCESS_EXITED');
      assert.ok(err instanceof InvalidStateError);
      assert.match(err.message, new RegExp(`process ${handle.pid} exited with code 3`));
      assert.equal(err.details?.exitCode, 3);
      await rejectsWithCode(handle.sendStdin('late'), 'PROCESS_EXITED');
      const { url, apiKey } = ctx.daemon();
      const res = await fetch(`${url}/v1/sandboxes/${sbx.sandboxId}/processes/${handle.pid}/stdin`, {
        method: 'POST', headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/octet-stream' }, body: 'late',
      });
      assert.equal(res.status, 409);
      const body = (await res.json()) as { error: { code: string; details?: { exitCode?: number } } };
      assert.equal(body.error.code, 'PROCESS_EXITED');
      assert.equal(body.error.details?.exitCode, 3);
    });

    test('killing a process that already exited resolves false', async () => {
      const done = await sbx.commands.run('true', { background: true });
      await done.wait();
      assert.equal(await sbx.commands.kill(done.pid), false, 'commands.kill of an exited process');
      assert.equal(await done.kill(), false, 'handle.kill of an exited process');
    });

    test('re-attach by pid from another client after the first disconnected', async () => {
      const handle = await sbx.commands.run('for i in 1 2 3 4 5 6; do echo line-$i; sleep 0.3; done', { background: true });
      await handle.disconnect();
      const other = await Sandbox.connect(sbx.sandboxId, ctx.conn());
      assert.ok((await other.commands.list()).some((p) => p.pid === handle.pid), 'the process is listed');
      const seen: string[] = [];
      const attached = await other.commands.connect(handle.pid, { onStdout: (d) => seen.push(d) });
      const result = await attached.wait();
      const expected = [1, 2, 3, 4, 5, 6].map((i) => `line-${i}\n`).join('');
      assert.equal(result.stdout, expected);
      assert.equal(seen.join(''), expected);
      const info = (await other.commands.list()).find((p) => p.pid === handle.pid);
      assert.equal(info?.running, false);
      assert.equal(info?.exitCode, 0);
    });
  });
}
