/**
 * The SSH gateway (issue 11, item 3) end to end: a REAL daemon (`serve()` in-process, prefix `rmsh`,
 * gVisor, the base rootfs with rsync and openssh-client) driven by the REAL OpenSSH client tools from
 * Debian and the built CLI. A shell on a terminal, commands with their exit codes, stdin and stderr,
 * scp (SFTP and legacy) of 50 MB both ways, an sftp batch, `ssh -L` to servers in the sandbox, rsync both
 * ways, a paused sandbox woken by a connection, keys and tokens through the CLI, and every refusal:
 * no credentials, an unregistered or removed key, an unknown user, an expired token, another sandbox's
 * token, a killed sandbox's token. Skipped, with the reason, when not root or without the tools.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, symlink, writeFile, chmod } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashSshToken } from '@ramify/core';
import { serve, type RamifyServer } from './serve.js';
import { apiCaller, realRuntimeSkip, registerRootfsTemplate, shellCaller, stopRealDaemon, until } from './real-test-support.js';
import { assertTerminalRun, background, cli, run, sshOptions, TERMINAL_INPUT } from './real-ssh-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc', 'ssh', 'scp', 'sftp', 'ssh-keygen', 'rsync', 'curl']);
const PREFIX = 'rmsh';

let dataDir: string;
let work: string;
let server: RamifyServer | undefined;
let apiKey = '';
let port = 0;
let sandboxId = '';
let keyFile = '';
const call = apiCaller(() => server?.url, () => apiKey);
const sh = shellCaller(call);
const connection = (): { apiUrl: string; apiKey: string } => ({ apiUrl: server?.url ?? '', apiKey });
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/** `ssh` with `identity` (null: none) as `user` (default the sandbox id); `args` after the destination (a command). */
function ssh(args: string[], options: { user?: string; identity?: string | null; input?: string | Buffer; before?: string[] } = {}) {
  const identity = options.identity === undefined ? keyFile : options.identity;
  return run('ssh', [...sshOptions(identity), '-p', String(port), ...(options.before ?? []), `${options.user ?? sandboxId}@127.0.0.1`, ...args], options.input === undefined ? {} : { input: options.input });
}

/** Whether `user` with `identity` is refused: exit 255 and OpenSSH's "Permission denied". */
async function refused(user: string, identity: string | null): Promise<boolean> {
  const r = await ssh(['echo', 'in'], { user, identity });
  return r.code === 255 && /Permission denied/.test(r.stderr) && r.stdout === '';
}

/** A port nothing listens on now (the kernel's pick), for `ssh -L`'s local end. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer().once('error', reject).listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address() as AddressInfo;
      probe.close(() => resolve(free));
    });
  });
}

async function newKey(name: string): Promise<string> {
  const path = join(work, name);
  const made = await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `${name}@test`, '-f', path]);
  assert.equal(made.code, 0, made.stderr);
  return path;
}

describe('SSH gateway through a real daemon (gVisor) and OpenSSH', { skip, timeout: 900_000 }, () => {
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-ssh-e2e-'));
    work = await mkdtemp(join(tmpdir(), 'ramify-ssh-work-'));
    server = await serve({ dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX }, ssh: { host: '127.0.0.1', port: 0 } });
    apiKey = server.newApiKey ?? '';
    port = server.ssh?.port ?? 0;
    await registerRootfsTemplate(server.core, rootfs as string, { templateId: 'tpl_ssh', snapshotId: 'snap_ssh_base' });
    const created = await call('POST', '/v1/sandboxes', { template: 'tpl_ssh', timeoutMs: 3_600_000 });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    sandboxId = created.json.id;
    keyFile = await newKey('id_main');
    const added = await cli(connection(), ['ssh-key', 'add', `${keyFile}.pub`, '--json']);
    assert.equal(added.code, 0, added.stderr);
  });
  after(async () => {
    if (server) await stopRealDaemon(server, call);
    server = undefined;
    await rm(dataDir, { recursive: true, force: true });
    await rm(work, { recursive: true, force: true });
  });

  test('keys through the CLI: add, list --json with ids, rm; a malformed key is a 400 SSH_KEY_INVALID', async () => {
    const second = await newKey('id_second');
    const added = await cli(connection(), ['ssh-key', 'add', `${second}.pub`, '--name', 'second', '--json']);
    assert.equal(added.code, 0, added.stderr);
    const info = JSON.parse(added.stdout);
    assert.match(info.id, /^sshk_/);
    assert.match(info.fingerprint, /^SHA256:/);
    const listed = JSON.parse((await cli(connection(), ['ssh-key', 'list', '--json'])).stdout);
    assert.deepEqual(listed.keys.map((k: { name: string }) => k.name), ['id_main@test', 'second']);
    assert.ok(listed.keys.every((k: { id: string }) => k.id.startsWith('sshk_')));
    assert.equal((await cli(connection(), ['ssh-key', 'add', `${second}.pub`])).code, 1, 'the same key twice');
    assert.equal((await ssh(['echo', 'second'], { identity: second })).stdout, 'second\n');
    assert.equal((await cli(connection(), ['ssh-key', 'rm', info.id])).code, 0);
    assert.ok(await refused(sandboxId, second), 'a removed key opens nothing');

    for (const bad of ['ssh-ed25519 AAAAnotakey', await readFile(second, 'utf8'), 'hello', '']) {
      const r = await call('POST', '/v1/ssh-keys', { publicKey: bad });
      assert.equal(r.status, 400, bad);
      assert.equal(r.json.error.code, bad === '' ? 'VALIDATION_FAILED' : 'SSH_KEY_INVALID', bad);
    }
    await writeFile(join(work, 'bad.pub'), 'ssh-rsa not-base64!\n');
    const badCli = await cli(connection(), ['ssh-key', 'add', join(work, 'bad.pub')]);
    assert.equal(badCli.code, 1);
    assert.match(badCli.stderr, /SSH_KEY_INVALID: not an SSH public key/);
  });

  test('a shell on a terminal (ssh -tt, commands on stdin): default size, prompt, exit code', async () => {
    assertTerminalRun(await ssh([], { before: ['-tt'], input: TERMINAL_INPUT }));
  });

  test('commands: exit codes, stdout and stderr apart, stdin through to EOF', async () => {
    assert.equal((await ssh(['exit 7'])).code, 7);
    const both = await ssh(['echo out; echo err >&2']);
    assert.deepEqual([both.code, both.stdout, both.stderr], [0, 'out\n', 'err\n']);
    const piped = await ssh(['cat; echo done'], { input: 'abc\n' });
    assert.equal(piped.stdout, 'abc\ndone\n');
    const big = Buffer.alloc(3 << 20, 'x');
    const counted = await ssh(['wc -c'], { input: big });
    assert.equal(counted.stdout.trim(), String(big.length), 'every stdin byte, in one piece');
    const binary = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 13) % 256));
    assert.equal((await ssh(['sha256sum'], { input: binary })).stdout.split(' ')[0], sha256(binary));
    assert.equal((await ssh(['head -c 100000 /dev/zero'])).raw.length, 100_000);
  });

  test('scp up and down a 50 MB file (SFTP), sha256 equal; over an existing file; legacy scp -O too', async () => {
    const local = join(work, 'big.bin');
    const data = Buffer.alloc(50_000_000);
    for (let i = 0; i < data.length; i += 4) data.writeUInt32LE((i * 2654435761) >>> 0, i);
    await writeFile(local, data);
    const scp = (args: string[]): ReturnType<typeof run> => run('scp', [...sshOptions(keyFile), '-P', String(port), ...args]);
    const up = await scp([local, `${sandboxId}@127.0.0.1:/root/big.bin`]);
    assert.equal(up.code, 0, up.stderr);
    assert.equal((await sh(sandboxId, 'sha256sum /root/big.bin')).split(' ')[0], sha256(data));
    const down = await scp([`${sandboxId}@127.0.0.1:/root/big.bin`, join(work, 'down.bin')]);
    assert.equal(down.code, 0, down.stderr);
    assert.equal(sha256(await readFile(join(work, 'down.bin'))), sha256(data));
    await rm(join(work, 'down.bin'));
    // Over an existing, longer file: OpenSSH writes in place without truncating, then sets the size.
    const over = join(work, 'over.txt');
    await writeFile(over, 'shorter\n');
    assert.equal((await scp([over, `${sandboxId}@127.0.0.1:/root/big.bin`])).code, 0);
    assert.equal(await sh(sandboxId, 'cat /root/big.bin'), 'shorter\n');

    const small = join(work, 'legacy.txt');
    await writeFile(small, 'legacy scp\n');
    assert.equal((await scp(['-O', small, `${sandboxId}@127.0.0.1:/root/legacy.txt`])).code, 0);
    assert.equal((await scp(['-O', local, `${sandboxId}@127.0.0.1:/root/big.bin`])).code, 0);
    assert.equal((await scp(['-O', `${sandboxId}@127.0.0.1:/root/big.bin`, join(work, 'legacy-down.bin')])).code, 0);
    assert.equal(await sh(sandboxId, 'cat /root/legacy.txt'), 'legacy scp\n');
    assert.equal(sha256(await readFile(join(work, 'legacy-down.bin'))), sha256(data));
    await rm(join(work, 'legacy-down.bin'));
  });

  test('sftp -b: mkdir, put, ls, rename, chmod, symlink, get, rm, rmdir', async () => {
    await writeFile(join(work, 'note.txt'), 'hello sftp\n');
    const batch = [
      'mkdir /root/sftp-dir', 'cd /root/sftp-dir', `put ${join(work, 'note.txt')}`, 'ls', 'rename note.txt renamed.txt', 'chmod 600 renamed.txt',
      'symlink renamed.txt link.txt', 'ls -l', `get link.txt ${join(work, 'got.txt')}`, 'rm link.txt', 'mkdir empty', 'rmdir empty', 'ls',
    ];
    await writeFile(join(work, 'batch'), `${batch.join('\n')}\n`);
    const r = await run('sftp', [...sshOptions(keyFile), '-P', String(port), '-b', join(work, 'batch'), `${sandboxId}@127.0.0.1`]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /^note\.txt\s*$/m);
    assert.match(r.stdout, /^lrwxrwxrwx .* link\.txt$/m);
    assert.match(r.stdout, /^-rw------- .* renamed\.txt$/m);
    assert.equal(await readFile(join(work, 'got.txt'), 'utf8'), 'hello sftp\n');
    assert.equal(await sh(sandboxId, 'cd /root/sftp-dir && stat -c "%a %n" * && cat renamed.txt'), '600 renamed.txt\nhello sftp\n');
  });

  test('ssh -L reaches a server in the sandbox (bound to 0.0.0.0, and one on 127.0.0.1 only)', async () => {
    await sh(sandboxId, 'mkdir -p /srv/a /srv/b && echo from-any > /srv/a/index.html && echo from-loopback > /srv/b/index.html');
    for (const [dir, bind, p] of [['/srv/a', '0.0.0.0', 8000], ['/srv/b', '127.0.0.1', 8001]] as const) {
      const started = await call('POST', `/v1/sandboxes/${sandboxId}/commands`, { cmd: `cd ${dir} && exec python3 -m http.server ${p} --bind ${bind}`, background: true });
      assert.equal(started.status, 200, JSON.stringify(started.json));
    }
    const listening = (tcp: string, hex: string): boolean => tcp.includes(`:${hex} 00000000:0000 0A`);
    await until(async () => {
      const tcp = await sh(sandboxId, 'cat /proc/net/tcp');
      return listening(tcp, '1F40') && listening(tcp, '1F41');
    }, 'both servers listen');
    const [any, loopback] = [await freePort(), await freePort()];
    const tunnel = background('ssh', [...sshOptions(keyFile), '-p', String(port), '-N', '-o', 'ExitOnForwardFailure=yes', '-L', `127.0.0.1:${any}:localhost:8000`, '-L', `127.0.0.1:${loopback}:localhost:8001`, `${sandboxId}@127.0.0.1`]);
    try {
      const get = async (p: number): Promise<string> => (await run('curl', ['-sf', '-m', '10', `http://127.0.0.1:${p}/`])).stdout;
      await until(async () => (await get(any)) === 'from-any\n', `the forward to port 8000 answers (ssh: ${tunnel.stderr()})`);
      assert.equal(await get(loopback), 'from-loopback\n');
      assert.equal(await get(any), 'from-any\n', 'a second connection');
    } finally {
      await tunnel.stop();
    }
  });

  test('rsync -a both ways: content, modes and symlinks', async () => {
    const tree = join(work, 'tree');
    await mkdir(join(tree, 'a', 'b'), { recursive: true });
    await writeFile(join(tree, 'a', 'one.txt'), 'one\n');
    await writeFile(join(tree, 'a', 'b', 'blob.bin'), Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 31) % 256)));
    await chmod(join(tree, 'a', 'one.txt'), 0o600);
    await chmod(join(tree, 'a', 'b'), 0o750);
    await symlink('a/one.txt', join(tree, 'link'));
    const rsync = (from: string, to: string): ReturnType<typeof run> => run('rsync', ['-a', '-e', ['ssh', ...sshOptions(keyFile), '-p', String(port)].join(' '), from, to]);
    const up = await rsync(`${tree}/`, `${sandboxId}@127.0.0.1:/root/tree/`);
    assert.equal(up.code, 0, up.stderr);
    assert.equal(await sh(sandboxId, 'cd /root/tree && stat -c "%a %s %n" a/one.txt a/b/blob.bin && stat -c "%a %n" a a/b && readlink link'), '600 4 a/one.txt\n644 300000 a/b/blob.bin\n755 a\n750 a/b\na/one.txt\n', up.stderr);
    assert.equal((await sh(sandboxId, 'sha256sum /root/tree/a/b/blob.bin')).split(' ')[0], sha256(await readFile(join(tree, 'a', 'b', 'blob.bin'))));
    const back = join(work, 'tree-back');
    const down = await rsync(`${sandboxId}@127.0.0.1:/root/tree/`, `${back}/`);
    assert.equal(down.code, 0, down.stderr);
    assert.deepEqual(await readFile(join(back, 'a', 'b', 'blob.bin')), await readFile(join(tree, 'a', 'b', 'blob.bin')));
    assert.equal((await lstat(join(back, 'a', 'one.txt'))).mode & 0o777, 0o600);
    assert.equal((await lstat(join(back, 'a', 'b'))).mode & 0o777, 0o750);
    assert.equal(await readlink(join(back, 'link')), 'a/one.txt');
  });

  test('a paused sandbox is resumed by an SSH connection', async () => {
    const paused = await call('POST', `/v1/sandboxes/${sandboxId}/pause`);
    assert.equal(paused.json.state, 'paused', JSON.stringify(paused.json));
    const r = await ssh(['echo awake']);
    assert.equal(r.stdout, 'awake\n', r.stderr);
    assert.equal((await call('GET', `/v1/sandboxes/${sandboxId}`)).json.state, 'running');
  });

  test('tokens: the printed command opens its sandbox; nothing else gets in', async () => {
    const access = await cli(connection(), ['sandbox', 'ssh-access', sandboxId, '--ttl', '10m', '--json']);
    assert.equal(access.code, 0, access.stderr);
    const info = JSON.parse(access.stdout);
    assert.deepEqual(Object.keys(info).sort(), ['command', 'expiresAt', 'host', 'port', 'token', 'user']);
    assert.equal(info.user, `${sandboxId}+${info.token}`);
    assert.equal(info.command, `ssh -p ${port} ${info.user}@127.0.0.1`);
    const [, ...words] = (info.command as string).split(' ');
    const viaToken = await run('ssh', [...sshOptions(null), ...words, 'echo via-token']);
    assert.equal(viaToken.stdout, 'via-token\n', viaToken.stderr);

    const other = await call('POST', '/v1/sandboxes', { template: 'tpl_ssh', timeoutMs: 3_600_000 });
    const otherId: string = other.json.id;
    assert.ok(await refused(`${otherId}+${info.token}`, null), "another sandbox's token");
    assert.ok(await refused(`${sandboxId}+rst_${'A'.repeat(43)}`, null), 'a token never issued');
    assert.ok(await refused(sandboxId, null), 'no credentials at all');
    assert.ok(await refused(sandboxId, await newKey('id_unregistered')), 'an unregistered key');
    assert.ok(await refused('root', keyFile), 'a user that is no sandbox');
    assert.ok(await refused('sbx_01M8K8X452ADP02FS1JK0BWJKD', keyFile), 'an unknown sandbox');

    const expired = `rst_${Buffer.alloc(32, 7).toString('base64url')}`;
    const now = Date.now();
    await server!.core.store.insertSshToken({ hash: hashSshToken(expired), sandboxId, ownerApiKeyId: null, createdAt: now - 7_200_000, expiresAt: now - 3_600_000 });
    assert.ok(await refused(`${sandboxId}+${expired}`, null), 'an expired token');

    const otherAccess = JSON.parse((await cli(connection(), ['sandbox', 'ssh-access', otherId, '--json'])).stdout);
    assert.equal((await run('ssh', [...sshOptions(null), '-p', String(port), `${otherAccess.user}@127.0.0.1`, 'echo other'])).stdout, 'other\n');
    assert.equal((await call('DELETE', `/v1/sandboxes/${otherId}`)).status, 204);
    assert.ok(await refused(otherAccess.user, null), "a killed sandbox's token");
    assert.ok(await refused(otherId, keyFile), 'a killed sandbox, with a registered key');

    const tooLong = await cli(connection(), ['sandbox', 'ssh-access', sandboxId, '--ttl', '48h']);
    assert.equal(tooLong.code, 2, 'a ttl over 24 h is a usage error');
  });
});
