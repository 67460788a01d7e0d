/**
 * Cases of `real-scale-out.test.ts` for the API role's SSH relay (docs/design/SCALE-OUT.md, "SSH through the
 * API"), driven by the REAL OpenSSH tools (ssh, sftp) against the API process's listener, with a sandbox
 * on a host: a command with its exit code, stdout, stderr and stdin; a shell on a terminal; an sftp put and
 * get; `ssh -L` to a server in the sandbox; an `ssh-access` token answered by the API; a paused sandbox
 * woken; refusals (no key, an unregistered key, another team's key) with nothing reaching a host; another
 * host's gateway refusing the sandbox; a host without SSH and a host not answering told on stderr. Test support only.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { ApiReply } from './real-test-support.js';
import { until } from './real-test-support.js';
import { assertTerminalRun, background, run, sshOptions, TERMINAL_INPUT } from './real-ssh-support.js';
import type { RamifyServer } from './serve.js';

type Caller = (method: string, path: string, body?: unknown) => Promise<ApiReply>;

/** What the cases need of the suite: the API process, the default team's caller, another team's. */
export interface RelaySuite {
  api(): RamifyServer;
  hosts(): RamifyServer[];
  call: Caller;
  acme(): Caller;
  freePort(): Promise<number>;
}

/** Register the relay's cases (one sandbox for all) in the calling `describe`. */
export function sshRelayCases(suite: RelaySuite): void {
  let work = '';
  let keyFile = '';
  let id = '';
  /** Tokens the API minted for connections to hosts: a refused client must cause none. */
  let minted = 0;
  const port = (): number => suite.api().ssh?.port ?? 0;
  const ssh = (args: string[], options: { user?: string; identity?: string | null; input?: string; before?: string[] } = {}) =>
    run('ssh', [...sshOptions(options.identity === undefined ? keyFile : options.identity), '-p', String(port()), ...(options.before ?? []), `${options.user ?? id}@127.0.0.1`, ...args], options.input === undefined ? {} : { input: options.input });
  const newKey = async (name: string): Promise<string> => {
    const path = join(work, name);
    const made = await run('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', `${name}@test`, '-f', path]);
    assert.equal(made.code, 0, made.stderr);
    return path;
  };
  const addKey = async (caller: Caller, path: string): Promise<void> => {
    const added = await caller('POST', '/v1/ssh-keys', { publicKey: await readFile(`${path}.pub`, 'utf8') });
    assert.equal(added.status, 201, JSON.stringify(added.json));
  };

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'ramify-rr-ssh-'));
    keyFile = await newKey('id_main');
    const store = suite.api().core.store;
    const insert = store.insertSshToken.bind(store);
    store.insertSshToken = async (record) => {
      minted += 1;
      return insert(record);
    };
  });
  after(async () => {
    await rm(work, { recursive: true, force: true });
  });

  test('SSH through the API: commands, a terminal, sftp, ssh -L, ssh-access, a paused sandbox woken', async () => {
    const created = await suite.call('POST', '/v1/sandboxes', { timeoutMs: 600_000 });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    id = created.json.id as string;
    await addKey(suite.call, keyFile);

    const both = await ssh(['echo out; echo err >&2; cat; exit 7'], { input: 'in\n' });
    assert.deepEqual([both.code, both.stdout, both.stderr], [7, 'out\nin\n', 'err\n']);
    assertTerminalRun(await ssh([], { before: ['-tt'], input: TERMINAL_INPUT }));

    const payload = Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 7) % 251));
    await writeFile(join(work, 'up.bin'), payload);
    await writeFile(join(work, 'batch'), `put ${join(work, 'up.bin')} /root/up.bin\nget /root/up.bin ${join(work, 'down.bin')}\n`);
    const sftp = await run('sftp', [...sshOptions(keyFile), '-P', String(port()), '-b', join(work, 'batch'), `${id}@127.0.0.1`]);
    assert.equal(sftp.code, 0, sftp.stderr);
    assert.deepEqual(await readFile(join(work, 'down.bin')), payload);

    const server = await suite.call('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'mkdir -p /srv && echo relayed > /srv/index.html && cd /srv && exec python3 -m http.server 8000', background: true });
    assert.equal(server.status, 200, JSON.stringify(server.json));
    await until(async () => (await ssh(['cat /proc/net/tcp'])).stdout.includes(':1F40 00000000:0000 0A'), 'the server listens');
    const local = await suite.freePort();
    const tunnel = background('ssh', [...sshOptions(keyFile), '-p', String(port()), '-N', '-o', 'ExitOnForwardFailure=yes', '-L', `127.0.0.1:${local}:localhost:8000`, `${id}@127.0.0.1`]);
    try {
      await until(async () => (await run('curl', ['-sf', '-m', '10', `http://127.0.0.1:${local}/`])).stdout === 'relayed\n', `the forward answers (ssh: ${tunnel.stderr()})`);
    } finally {
      await tunnel.stop();
    }

    // ssh-access is answered by the API: its command names the API's relay, its token opens the sandbox there.
    const access = await suite.call('POST', `/v1/sandboxes/${id}/ssh-access`, { ttlMs: 60_000 });
    assert.equal(access.status, 201, JSON.stringify(access.json));
    assert.equal(access.json.port, port());
    assert.equal((await ssh(['echo token'], { user: access.json.user as string, identity: null })).stdout, 'token\n');

    const paused = await suite.call('POST', `/v1/sandboxes/${id}/pause`);
    assert.equal(paused.json.state, 'paused', JSON.stringify(paused.json));
    const woken = await ssh(['echo awake']);
    assert.equal(woken.stdout, 'awake\n', woken.stderr);
    assert.equal((await suite.call('GET', `/v1/sandboxes/${id}`)).json.state, 'running');
  });

  test('SSH through the API: refusals reach no host; a host without SSH or not answering is told on stderr', async () => {
    const refused = async (identity: string | null): Promise<boolean> => {
      const r = await ssh(['echo in'], { identity });
      return r.code === 255 && /Permission denied/.test(r.stderr) && r.stdout === '';
    };
    const acmeKey = await newKey('id_acme');
    await addKey(suite.acme(), acmeKey);
    const before = minted;
    assert.ok(await refused(null), 'no key');
    assert.ok(await refused(await newKey('id_unregistered')), 'an unregistered key');
    assert.ok(await refused(acmeKey), "another team's key");
    assert.equal(minted, before, 'no connection to a host was made');

    // A host's own gateway serves its own sandboxes only: another host's, even with a live token, is refused.
    const onHost = (await suite.api().core.store.getSandbox(id))!.hostId;
    const other = suite.hosts().find((h) => h.core.hostId !== onHost)!;
    const token = (await suite.call('POST', `/v1/sandboxes/${id}/ssh-access`, {})).json.user as string;
    const direct = await run('ssh', [...sshOptions(null), '-p', String(other.ssh?.port), `${token}@127.0.0.1`, 'echo in']);
    assert.equal(direct.code, 255, direct.stdout);
    assert.match(direct.stderr, new RegExp(`ramify: sandbox '${id}' is on host '${onHost}', not this one \\(${other.core.hostId}\\): connect through the API's SSH gateway`));

    // The sandbox's host as the registry would have it without an SSH gateway, then with one that does not answer.
    const store = suite.api().core.store;
    const hostId = (await store.getSandbox(id))!.hostId!;
    const host = (await store.getHost(hostId))!;
    const register = (sshAddress: string | undefined) => store.registerHost({
      id: host.id, url: host.url, capacity: host.capacity, cachedImageIds: host.cachedImageIds, pendingUploadIds: host.pendingUploadIds,
      ...(sshAddress ? { sshAddress } : {}), hostNowMs: Date.now(), leaseMs: 3000, maxClockSkewMs: 2000,
    });
    try {
      await register(undefined);
      const none = await ssh(['echo in']);
      assert.equal(none.code, 255);
      assert.match(none.stderr, new RegExp(`ramify: host '${hostId}' \\(which runs sandbox '${id}'\\) serves no SSH gateway`));
      await register(`127.0.0.1:${await suite.freePort()}`);
      const dead = await ssh(['echo in']);
      assert.equal(dead.code, 255);
      assert.match(dead.stderr, new RegExp(`ramify: host '${hostId}' at 127\\.0\\.0\\.1:\\d+ did not let the SSH relay in: .*ECONNREFUSED`));
    } finally {
      await register(host.sshAddress ?? undefined);
    }
    assert.equal((await ssh(['echo back'])).stdout, 'back\n');
  });
}
