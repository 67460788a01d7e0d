/**
 * Protocol tests of command streaming against the in-test contract fixture (node:http + ws): framing,
 * streaming UTF-8 decoding, exit handling, stdin (to an exited process too), background handles, and
 * resuming a dropped stream from byte offsets. Commands are scripts inside the fixture; no runtime is
 * involved.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startContractServer, type CommandScript, type ContractServer } from '../testing/contract-server.js';
import { AuthenticationError, CommandExitError, InvalidStateError, NotFoundError, Sandbox } from '../index.js';

const TEXT = 'héllo wörld — 世界 🎉\n';
const scripts: Record<string, CommandScript> = {
  // Every byte in its own frame, so every multi-byte character is split across frames.
  'bytewise': async (ctx) => { for (const b of Buffer.from(TEXT)) ctx.stdout(Uint8Array.of(b)); ctx.stderr('ë'); return 0; },
  'fail': async (ctx) => { ctx.stdout('partial'); ctx.stderr('boom\n'); return 3; },
  'binary': async (ctx) => { ctx.stdout(Uint8Array.of(0, 255, 254, 10)); return 0; },
  // Emit A, drop the socket, emit B while nobody listens, wait for the re-attach, emit C (split mid-character).
  'flaky': async (ctx) => {
    await ctx.subscribed();
    ctx.stdout('A-é'.slice(0, 2));
    await ctx.dropStreams();
    const bytes = Buffer.from('é-B-世');
    ctx.stdout(bytes.subarray(0, bytes.length - 1));
    const reattached = ctx.nextAttach();
    await reattached;
    ctx.stdout(bytes.subarray(bytes.length - 1));
    ctx.stderr('done');
    return 0;
  },
  'forever': async (ctx) => { ctx.stdout('tick\n'); await ctx.killed; },
  // Emits one line per stdin chunk until stdin closes (the test drives it across a pause).
  'lines': async (ctx) => { for await (const c of ctx.stdin) ctx.stdout(`got ${Buffer.from(c).toString('utf8')}\n`); return 0; },
  'slow-echo': async (ctx) => { for await (const c of ctx.stdin) ctx.stdout(Buffer.from(c).toString('utf8').toUpperCase()); return 0; },
};

let server: ContractServer;
let sbx: Sandbox;
before(async () => {
  server = await startContractServer({ scripts: (cmd) => scripts[cmd] });
  sbx = await Sandbox.create({ apiUrl: server.url, apiKey: server.apiKey });
});
after(async () => { await server.close(); });

describe('protocol: commands.run (foreground, WebSocket stream)', () => {
  test('streams output to callbacks and resolves the result', async () => {
    const seen: string[] = [];
    const r = await sbx.commands.run('echo hi', { onStdout: (d) => seen.push(d) });
    assert.deepEqual({ ...r, capture: undefined }, { pid: r.pid, exitCode: 0, signal: null, error: null, stdout: 'hi\n', stderr: '', truncated: false, capture: undefined });
    assert.equal(seen.join(''), 'hi\n');
  });

  test('multi-byte UTF-8 split across frames decodes exactly; byte callbacks see raw bytes', async () => {
    const text: string[] = [];
    const bytes: Uint8Array[] = [];
    const r = await sbx.commands.run('bytewise', { onStdout: (d) => text.push(d), onStdoutBytes: (b) => bytes.push(Uint8Array.from(b)) });
    assert.equal(r.stdout, TEXT);
    assert.equal(text.join(''), TEXT);
    assert.ok(text.every((t) => !t.includes('\uFFFD')));
    assert.deepEqual(Buffer.concat(bytes), Buffer.from(TEXT));
    assert.equal(r.stderr, 'ë');
  });

  test('binary output is exact through onStdoutBytes', async () => {
    const bytes: Uint8Array[] = [];
    await sbx.commands.run('binary', { onStdoutBytes: (b) => bytes.push(Uint8Array.from(b)) });
    assert.deepEqual([...Buffer.concat(bytes)], [0, 255, 254, 10]);
  });

  test('a non-zero exit throws CommandExitError carrying the result', async () => {
    await assert.rejects(sbx.commands.run('fail'), (e: unknown) => {
      assert.ok(e instanceof CommandExitError);
      assert.equal(e.code, 'COMMAND_EXIT');
      assert.equal(e.exitCode, 3);
      assert.equal(e.result.stdout, 'partial');
      assert.equal(e.stderr, 'boom\n');
      return true;
    });
  });

  test('stdin data is sent and then closed', async () => {
    const r = await sbx.commands.run('slow-echo', { stdin: 'abc' });
    assert.equal(r.stdout, 'ABC');
    async function* chunks() { yield 'x'; yield new TextEncoder().encode('y'); }
    assert.equal((await sbx.commands.run('cat', { stdin: chunks() })).stdout, 'xy');
  });

  test('start errors arrive as typed errors', async () => {
    await assert.rejects(sbx.commands.run('echo x', { cwd: '/nowhere' }), (e: unknown) => e instanceof Error && (e as { code?: string }).code === 'CWD_NOT_FOUND');
    await assert.rejects(Sandbox.fromId('sbx_gone', { apiUrl: server.url, apiKey: server.apiKey }).commands.run('echo x'),
      (e: unknown) => e instanceof NotFoundError && e.code === 'SANDBOX_NOT_FOUND');
    // A refused upgrade (HTTP 401 with an error body) maps like any HTTP error.
    await assert.rejects(Sandbox.fromId(sbx.sandboxId, { apiUrl: server.url, apiKey: 'rmf_wrong' }).commands.run('echo x'),
      (e: unknown) => e instanceof AuthenticationError && e.code === 'UNAUTHORIZED');
  });

  test('an exit frame that overtakes the started frame still gives the pid and the output', async () => {
    const late = await startContractServer({ startedFrame: 'after-exit' });
    try {
      const other = await Sandbox.create({ apiUrl: late.url, apiKey: late.apiKey });
      const r = await other.commands.run('echo quick');
      assert.equal(r.stdout, 'quick\n');
      assert.ok(r.pid >= 100);
      await assert.rejects(other.commands.run('exit 4'), (e: unknown) => e instanceof CommandExitError && e.exitCode === 4 && e.result.pid >= 100);
    } finally { await late.close(); }
  });

  test('a dropped stream resumes from the received byte offsets: nothing lost, nothing repeated', async () => {
    const seen: string[] = [];
    const r = await sbx.commands.run('flaky', { onStdout: (d) => seen.push(d) });
    assert.equal(r.stdout, 'A-é-B-世');
    assert.equal(seen.join(''), 'A-é-B-世');
    assert.equal(r.stderr, 'done');
    const reattach = server.requests.filter((q) => q.ws && q.path.endsWith(`/processes/${r.pid}/stream`));
    assert.equal(reattach.length, 1);
    assert.deepEqual(reattach[0].query, { stdout: String(Buffer.byteLength('A-')), stderr: '0' });
  });
});

describe('protocol: background handles', () => {
  test('background run returns a handle; stdin, wait, output', async () => {
    const out: string[] = [];
    const h = await sbx.commands.run('cat', { background: true, stdin: true, onStdout: (d) => out.push(d) });
    assert.ok(h.pid > 0);
    await h.sendStdin('one ');
    await h.sendStdin(new TextEncoder().encode('two'));
    await h.closeStdin();
    const r = await h.wait();
    assert.equal(r.stdout, 'one two');
    assert.equal(out.join(''), 'one two');
    assert.equal(h.exitCode, 0);
  });

  test('stdin to a process that has exited is InvalidStateError PROCESS_EXITED with the exit code', async () => {
    const h = await sbx.commands.run('exit 4', { background: true, stdin: true });
    await h.wait().catch(() => undefined);
    await assert.rejects(sbx.commands.sendStdin(h.pid, 'late'), (e: unknown) => {
      assert.ok(e instanceof InvalidStateError);
      assert.equal(e.code, 'PROCESS_EXITED');
      assert.match(e.message, /exited with code 4/);
      assert.equal(e.details?.exitCode, 4);
      return true;
    });
    await assert.rejects(h.sendStdin('late'), { code: 'PROCESS_EXITED' });
  });

  test('kill ends a process with SIGKILL; wait throws CommandExitError with the signal', async () => {
    const h = await sbx.commands.run('forever', { background: true });
    assert.ok((await sbx.commands.list()).some((p) => p.pid === h.pid && p.running));
    assert.equal(await h.kill(), true);
    await assert.rejects(h.wait(), (e: unknown) => e instanceof CommandExitError && e.signal === 'SIGKILL' && e.stdout === 'tick\n');
    assert.equal(await sbx.commands.kill(99999), false);
  });

  test('connect replays from the start or from given offsets; disconnect leaves the process running', async () => {
    const h = await sbx.commands.run('cat', { background: true, stdin: true });
    await sbx.commands.sendStdin(h.pid, 'hello ');
    while (!h.stdout) await new Promise((r) => setTimeout(r, 5));
    await h.disconnect();
    const again = await sbx.commands.connect(h.pid);
    const tail = await sbx.commands.connect(h.pid, { from: { stdout: 3, stderr: 0 } });
    await sbx.commands.sendStdin(h.pid, 'world');
    await sbx.commands.closeStdin(h.pid);
    assert.equal((await again.wait()).stdout, 'hello world');
    assert.equal((await tail.wait()).stdout, 'lo world');
    const afterDisconnect = await h.wait();
    assert.equal(afterDisconnect.exitCode, 0);
    assert.equal(afterDisconnect.stdout, 'hello ');
    await assert.rejects(sbx.commands.connect(424242), (e: unknown) => e instanceof NotFoundError && e.code === 'PROCESS_NOT_FOUND');
  });

  test('a pause ends the stream (close 1001); the handle waits for the resume and re-attaches from its offsets', async () => {
    const seen: string[] = [];
    const h = await sbx.commands.run('lines', { background: true, stdin: true, onStdout: (d) => seen.push(d) });
    await sbx.commands.sendStdin(h.pid, 'a');
    while (!h.stdout) await new Promise((r) => setTimeout(r, 5));
    const attachesBefore = server.requests.filter((q) => q.ws && q.path.endsWith(`/processes/${h.pid}/stream`)).length;
    await sbx.pause();
    // While paused the fixture's process still buffers output (a real one would be frozen); nothing may be lost.
    const proc = server.state.get(sbx.sandboxId).processes.get(h.pid);
    proc?.writeStdin(new TextEncoder().encode('b'));
    await new Promise((r) => setTimeout(r, 300));
    await sbx.resume();
    await sbx.commands.sendStdin(h.pid, 'c');
    await sbx.commands.closeStdin(h.pid);
    const r = await h.wait();
    assert.equal(r.stdout, 'got a\ngot b\ngot c\n');
    assert.equal(seen.join(''), r.stdout);
    const attaches = server.requests.filter((q) => q.ws && q.path.endsWith(`/processes/${h.pid}/stream`)).slice(attachesBefore);
    assert.ok(attaches.length >= 1);
    assert.equal(attaches.at(-1)?.query.stdout, String(Buffer.byteLength('got a\n')));
  });

  test('a killed sandbox ends a waiting handle with the API error', async () => {
    const other = await Sandbox.create({ apiUrl: server.url, apiKey: server.apiKey });
    const h = await other.commands.run('forever', { background: true });
    await other.pause();
    await other.kill();
    await assert.rejects(h.wait(), (e: unknown) => e instanceof Error && (e as { code?: string }).code === 'INVALID_STATE');
  });
});
