/**
 * `ramify sandbox shell` end to end: the BUILT CLI (packages/cli/dist/main.js) runs inside a detached
 * tmux session of a fixed size, against a REAL daemon (gVisor, the real agent and its PTY addon), and
 * is driven like a person would: `tmux send-keys` types, `capture-pane` reads the screen,
 * `resize-window` resizes. Each run goes through a wrapper that records the CLI's exit code and the
 * local terminal's mode (`stty -a`) right after it, so "restored on every exit path" is checked on the
 * very terminal the CLI had (Node also resets a terminal it put in raw mode when it exits, so this
 * is what the user is left with; the CLI's own restore covers the time it still runs after a session:
 * its error messages, the bounded kill after a signal). Skipped, with the reason, when not root, without runsc or tmux, or without
 * the base rootfs. The daemon uses its own network prefix `rmtx`; the tmux server its own socket.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Sandbox } from '@ramify/sdk';
import { serve, type RamifyServer } from './serve.js';
import { apiCaller, realRuntimeSkip, registerRootfsTemplate, stopRealDaemon, until } from './real-test-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc', 'tmux']);
const CLI_MAIN = join(dirname(fileURLToPath(import.meta.resolve('@ramify/cli'))), 'main.js');
const PREFIX = 'rmtx';
/** A bash at a prompt the test can recognise (no rc files). */
const PROMPT = 'READY$ ';
const SHELL_CMD = `PS1='${PROMPT}' exec /bin/bash --norc --noprofile -i`;

let dir = '';
let server: RamifyServer | undefined;
let key = '';
const call = apiCaller(() => server?.url, () => key);
const conn = (): { apiUrl: string; apiKey: string } => ({ apiUrl: server?.url ?? '', apiKey: key });
const run = promisify(execFile);

const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** One tmux server on its own socket (never the user's), its sessions named by the test. */
const tmux = {
  async cmd(...args: string[]): Promise<string> {
    return (await run('tmux', ['-S', join(dir, 'tmux.sock'), ...args], { encoding: 'utf8' })).stdout;
  },
  /** The pane's screen and history as text, wrapped lines joined. */
  async screen(name: string): Promise<string> {
    return this.cmd('capture-pane', '-p', '-J', '-S', '-500', '-t', name);
  },
  /** Type `text` literally, then Enter. */
  async type(name: string, text: string): Promise<void> {
    await this.cmd('send-keys', '-t', name, '-l', text);
    await this.cmd('send-keys', '-t', name, 'Enter');
  },
  async waitForScreen(name: string, pattern: RegExp): Promise<string> {
    let last = '';
    await until(async () => pattern.test(last = await this.screen(name)), `the screen of ${name} matches ${pattern}`, 60_000)
      .catch((err: Error) => { throw new Error(`${err.message}; last screen:\n${last.trimEnd()}`); });
    return last;
  },
};

/** A CLI run in a tmux session: its exit code and the terminal's mode once it ended. */
interface ShellRun {
  name: string;
  /** Resolves once the CLI exited (bounded by `until`). */
  ended(): Promise<{ code: number; stty: string }>;
}

/**
 * Start `ramify sandbox shell ARGS` in a new detached tmux session of `cols`x`rows`. The wrapper writes
 * `stty -a` and the exit code after the CLI, then holds the pane open for `capture-pane`.
 */
async function startShell(name: string, args: string[], size = { cols: 100, rows: 30 }): Promise<ShellRun> {
  const files = { rc: join(dir, `${name}.rc`), stty: join(dir, `${name}.stty`) };
  const script = join(dir, `${name}.sh`);
  await writeFile(script, [
    `export RAMIFY_API_URL=${quote(server?.url ?? '')} RAMIFY_API_KEY=${quote(key)} RAMIFY_HOME=${quote(dir)}`,
    `${quote(process.execPath)} ${quote(CLI_MAIN)} sandbox shell ${args.map(quote).join(' ')}`,
    'rc=$?',
    `stty -a > ${quote(files.stty)}`,
    `echo "$rc" > ${quote(`${files.rc}.tmp`)} && mv ${quote(`${files.rc}.tmp`)} ${quote(files.rc)}`,
    'echo "[cli exited $rc]"',
    'exec tail -f /dev/null',
  ].join('\n'));
  await tmux.cmd('new-session', '-d', '-s', name, '-x', String(size.cols), '-y', String(size.rows), 'sh', script);
  return {
    name,
    async ended() {
      await until(async () => existsSync(files.rc), `ramify sandbox shell in tmux session ${name} exited`, 60_000)
        .catch(async (err: Error) => { throw new Error(`${err.message}; screen:\n${(await tmux.screen(name)).trimEnd()}`); });
      return { code: Number((await readFile(files.rc, 'utf8')).trim()), stty: await readFile(files.stty, 'utf8') };
    },
  };
}

/** The local terminal is back in its usual (cooked) mode: canonical input and echo on. */
function assertCooked(stty: string): void {
  assert.match(stty, /(^|\s)icanon(\s|;|$)/, `icanon is on again:\n${stty}`);
  assert.match(stty, /(^|\s)echo(\s|;|$)/, `echo is on again:\n${stty}`);
}

/** The sandbox's running terminals (processes with a size). */
async function terminals(sbx: Sandbox): Promise<Array<{ pid: number; pty?: { cols: number; rows: number } }>> {
  return (await sbx.commands.list()).filter((p) => p.pty !== undefined && p.running);
}

/** Whether a process named `name` runs in the sandbox (pgrep -x). */
async function running(sbx: Sandbox, name: string): Promise<boolean> {
  const r = await sbx.commands.run(`pgrep -x ${name} || true`);
  return r.stdout.trim().length > 0;
}

describe('ramify sandbox shell in tmux against a real daemon (gVisor)', { skip, timeout: 600_000 }, () => {
  let sbx: Sandbox;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ramify-shell-tmux-'));
    server = await serve({ dataDir: join(dir, 'data'), port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX } });
    key = server.newApiKey ?? '';
    await registerRootfsTemplate(server.core, rootfs as string, { templateId: 'tpl_shell', snapshotId: 'snap_shell_base' });
    sbx = await Sandbox.create({ template: 'tpl_shell', ...conn() });
  });
  after(async () => {
    await tmux.cmd('kill-server').catch(() => undefined);
    if (server) await stopRealDaemon(server, call);
    server = undefined;
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('runs a command, follows a resize, passes Ctrl-C through, exits 7 on `exit 7`, restores the terminal', async () => {
    const shell = await startShell('main', ['--cmd', SHELL_CMD, sbx.sandboxId], { cols: 100, rows: 30 });
    await tmux.waitForScreen('main', /READY\$ $/m);
    await tmux.type('main', 'echo "sum $((6*7))"');
    await tmux.waitForScreen('main', /^sum 42$/m);

    // The remote terminal started at tmux's size, and follows the window's.
    await tmux.type('main', 'stty size');
    await tmux.waitForScreen('main', /^30 100$/m);
    await tmux.cmd('resize-window', '-t', 'main', '-x', '120', '-y', '40');
    await until(async () => (await terminals(sbx)).some((t) => t.pty?.cols === 120 && t.pty.rows === 40), 'the remote terminal is 120x40');
    await tmux.type('main', 'stty size');
    await tmux.waitForScreen('main', /^40 120$/m);

    // Ctrl-C reaches the remote foreground job (not the CLI): the sleep dies, the prompt comes back.
    await tmux.type('main', 'sleep 100');
    await until(() => running(sbx, 'sleep'), 'sleep 100 runs in the sandbox');
    await tmux.cmd('send-keys', '-t', 'main', 'C-c');
    await until(async () => !(await running(sbx, 'sleep')), 'Ctrl-C ended the sleep');
    await tmux.type('main', 'echo "after $((6*7))"');
    await tmux.waitForScreen('main', /^after 42$/m);

    await tmux.type('main', 'exit 7');
    const { code, stty } = await shell.ended();
    assert.equal(code, 7);
    assertCooked(stty);
    assert.deepEqual(await terminals(sbx), [], 'no terminal left running');
  });

  test('a paused sandbox: a clear message pointing at --resume; --resume opens the shell; Ctrl-D leaves it', async () => {
    await sbx.pause();
    const refused = await (await startShell('paused', [sbx.sandboxId])).ended();
    assert.equal(refused.code, 125);
    assertCooked(refused.stty);
    const screen = await tmux.screen('paused');
    assert.match(screen, /SANDBOX_PAUSED: sandbox \S+ is paused: 'ramify sandbox shell --resume \S+' resumes it/);
    assert.equal((await sbx.getInfo()).state, 'paused', 'the refusal changed nothing');

    // The default command: the template's login shell.
    const resumed = await startShell('resumed', ['--resume', sbx.sandboxId]);
    await tmux.waitForScreen('resumed', /[#$] $/m);
    await tmux.type('resumed', 'echo "resumed $((6*7))"');
    await tmux.waitForScreen('resumed', /^resumed 42$/m);
    await tmux.cmd('send-keys', '-t', 'resumed', 'C-d');
    const { code, stty } = await resumed.ended();
    assert.equal(code, 0);
    assertCooked(stty);
    assert.equal((await sbx.getInfo()).state, 'running');
  });

  test('an unknown id fails clearly with a non-zero exit', async () => {
    const { code, stty } = await (await startShell('unknown', ['sbx_00000000000000000000000000'])).ended();
    assert.equal(code, 125);
    assertCooked(stty);
    assert.match(await tmux.screen('unknown'), /SANDBOX_NOT_FOUND: no sandbox 'sbx_0+' \(see 'ramify sandbox list --all'\)/);
  });

  test('the sandbox killed under an open shell: a clear error, the terminal restored', async () => {
    const doomed = await Sandbox.create({ template: 'tpl_shell', ...conn() });
    const shell = await startShell('killed', ['--cmd', SHELL_CMD, doomed.sandboxId]);
    await tmux.waitForScreen('killed', /READY\$ $/m);
    await doomed.kill();
    const { code, stty } = await shell.ended();
    assert.equal(code, 125);
    assertCooked(stty);
    assert.match(await tmux.screen('killed'), /^ramify: SANDBOX_KILLED: sandbox \S+ was killed while the shell was open; the shell ended with it$/m);
  });

  test('SIGTERM to the CLI: the remote shell is killed, the CLI exits 143, the terminal restored', async () => {
    const shell = await startShell('term', ['--cmd', SHELL_CMD, sbx.sandboxId]);
    await tmux.waitForScreen('term', /READY\$ $/m);
    const remote = await terminals(sbx);
    assert.equal(remote.length, 1);
    // The pane runs the wrapper (sh); the CLI is its only child.
    const wrapper = (await tmux.cmd('display-message', '-p', '-t', 'term', '#{pane_pid}')).trim();
    const cli = Number((await run('pgrep', ['-P', wrapper], { encoding: 'utf8' })).stdout.trim());
    process.kill(cli, 'SIGTERM');
    const { code, stty } = await shell.ended();
    assert.equal(code, 143);
    assertCooked(stty);
    // The CLI left the cursor on a fresh line (the remote prompt had none after it).
    assert.match(await tmux.screen('term'), /^\[cli exited 143\]$/m);
    await until(async () => !(await sbx.commands.list()).some((p) => p.pid === remote[0]!.pid && p.running), 'the remote shell was killed');
  });
});
