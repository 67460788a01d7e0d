/**
 * A failed `ramify serve` says what failed and how to fix it, and leaves nothing behind, with REAL daemons
 * (the CLI as a child process; gVisor, namespaces, nftables, ulogd; prefix `rsf`):
 * - an address one of its listeners needs (API, ingress, SSH), held by another process: exit 1 with
 *   `ADDRESS_IN_USE` naming the listener, the address, the holder's pid and the flag to change, in the
 *   foreground and with `--detach`; checked before the network is set up, so none of the prefix's
 *   namespaces or nftables tables is made;
 * - a failure after the network set-up began (an ingress TLS key file that does not exist): the set-up
 *   this start made is removed before it exits; one that was there before the start stays, and the
 *   message names the `ramify serve --reset-network` that removes it;
 * - a second daemon (another data directory, other ports) on the prefix of one that runs: exit 1 with
 *   `NETWORK_PREFIX_IN_USE` naming the first, whose set-up stays; its `--reset-network` is refused too.
 * Skipped, with the reason, when not root or without the tools.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '@ramify/network';
import { dataDirHolder } from './data-dir-lock.js';
import { forceCleanup, leftovers } from './real-egress-support.js';
import { freePort, holdPort, runCli } from './testing/daemon-process.js';

const PREFIX = 'rsf';
/** The prefix's tables beside `inet rsf`, which {@link leftovers} lists only when asked. */
const EXTRA_TABLES = [`${PREFIX}_agent`, `${PREFIX}_ingress`];
const missingTool = ['ip', 'nft', 'runsc', 'ss'].find((tool) => spawnSync('sh', ['-c', 'command -v "$1"', 'sh', tool]).status !== 0);
const skip = process.getuid?.() !== 0 ? 'needs root (namespaces, nftables)' : missingTool ? `${missingTool} is not installed` : false;

const holders: ChildProcess[] = [];
const dataDirs: string[] = [];

/** Run `ramify <args>` until it exits (at most 200 s: `--detach` waits up to 180 s). */
const cli = (args: string[]): Promise<{ code: number | null; output: string }> => runCli(args, { timeoutMs: 200_000 });

/** `ramify serve` on a new data directory under this test's prefix with `listen` (its listeners' flags) and `extra` flags. */
async function serve(listen: { port: number; ingress: string; ssh: string }, extra: string[] = []): Promise<{ code: number | null; output: string; dataDir: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'ramify-rsf-'));
  dataDirs.push(dataDir);
  const result = await cli(['serve', '--data-dir', dataDir, '--network-prefix', PREFIX, '--port', String(listen.port), '--ingress-listen', listen.ingress,
    '--ssh-listen', listen.ssh, '--warm-pool', 'off', ...extra]);
  return { ...result, dataDir };
}

/** The JSON log lines' `msg`s in `output`. */
const messages = (output: string): string[] => output.split('\n').filter((l) => l.startsWith('{')).map((l) => String((JSON.parse(l) as { msg?: unknown }).msg));

describe('failed starts say why and leave nothing behind (real daemons)', { skip, timeout: 600_000 }, () => {
  after(async () => {
    for (const holder of holders) holder.kill('SIGKILL');
    for (const dataDir of dataDirs) {
      await forceCleanup(PREFIX, dataDir);
      await rm(dataDir, { recursive: true, force: true });
    }
    await run(['nft', 'delete', 'table', 'inet', PREFIX]);
    assert.deepEqual(await leftovers(PREFIX, '/nonexistent', EXTRA_TABLES), [], 'nothing of the test is left on the host');
  });

  const listeners = [
    { kind: 'API', flag: '--port' },
    { kind: 'ingress (port URLs)', flag: '--ingress-listen' },
    { kind: 'SSH gateway', flag: '--ssh-listen' },
  ] as const;
  for (const { kind, flag } of listeners) {
    test(`a taken ${kind} address: ADDRESS_IN_USE naming it, its holder and ${flag}; no namespace or table made`, async () => {
      assert.deepEqual(await leftovers(PREFIX, '/nonexistent', EXTRA_TABLES), [], 'nothing of the prefix before');
      const taken = await holdPort();
      holders.push(taken.child);
      const address = `127.0.0.1:${taken.port}`;
      const free = async (): Promise<string> => `127.0.0.1:${await freePort()}`;
      const listen = {
        port: kind === 'API' ? taken.port : await freePort(),
        ingress: kind === 'ingress (port URLs)' ? address : await free(),
        ssh: kind === 'SSH gateway' ? address : await free(),
      };
      const { code, output, dataDir } = await serve(listen);
      assert.equal(code, 1, output);
      const headline = new RegExp(`^ramify: ADDRESS_IN_USE: the ${kind.replace(/[()]/g, '\\$&')} address ${address} is in use by another process \\(pid ${taken.pid}, program .+\\)\\. Stop it, or give this daemon another ${flag} `, 'm');
      assert.match(output, headline);
      assert.equal(output.match(/ADDRESS_IN_USE/g)?.length, 1, `said once (no JSON line on a pipe): ${output}`);
      assert.ok(!messages(output).includes('egress enforcement ready'), `checked before the network set-up: ${output}`);
      assert.deepEqual(await leftovers(PREFIX, dataDir, EXTRA_TABLES), [], 'no namespace or table of the prefix');

      if (kind !== 'API') return;
      // --detach says the same (the daemon's own error, from its log), not that it "did not come up".
      const detached = await cli(['serve', '--detach', '--data-dir', dataDir, '--network-prefix', PREFIX, '--port', String(taken.port), '--ingress-listen', listen.ingress, '--ssh-listen', listen.ssh, '--warm-pool', 'off']);
      assert.equal(detached.code, 1, detached.output);
      assert.match(detached.output, headline);
      assert.equal(detached.output.match(/ADDRESS_IN_USE/g)?.length, 1, `said once: ${detached.output}`);
      assert.deepEqual(await leftovers(PREFIX, dataDir, EXTRA_TABLES), [], 'no namespace or table of the prefix after --detach');
    });
  }

  test('a failure after the network set-up began: the set-up this start made is removed', async () => {
    const { code, output, dataDir } = await serve({ port: 0, ingress: '127.0.0.1:0', ssh: 'off' }, ['--ingress-tls-cert', '/nonexistent/cert.pem', '--ingress-tls-key', '/nonexistent/key.pem']);
    assert.equal(code, 1, output);
    assert.match(output, /^ramify: ENOENT: .*\/nonexistent\/cert\.pem'$/m, 'the failure, and no note: nothing stays');
    // If this fails, the TLS files are read before the network set-up: pick another late failure for this test.
    assert.ok(messages(output).includes('egress enforcement ready'), `the network set-up began: ${output}`);
    assert.ok(messages(output).includes('removed the network set-up of the failed start'), output);
    assert.deepEqual(await leftovers(PREFIX, dataDir, EXTRA_TABLES), [], 'no namespace or table of the prefix');
  });

  test('a set-up of the prefix from before the start stays, and the message names the --reset-network that removes it', async () => {
    await run(['nft', 'add', 'table', 'inet', PREFIX]);
    const { code, output, dataDir } = await serve({ port: 0, ingress: '127.0.0.1:0', ssh: 'off' }, ['--ingress-tls-cert', '/nonexistent/cert.pem', '--ingress-tls-key', '/nonexistent/key.pem']);
    assert.equal(code, 1, output);
    const reset = `ramify serve --reset-network --data-dir ${dataDir} --network-prefix ${PREFIX}`;
    assert.match(output, new RegExp(`^ramify: ENOENT: .*'\\. The network set-up of prefix '${PREFIX}' \\(\\d+ namespaces ${PREFIX}-\\*, nftables tables inet ${PREFIX}.*\\) was on the host before this start and stays; `
      + `once no daemon or sandbox of this prefix uses it, ${reset.replace(/[-/\\^$*+?.()|[\]{}]/g, '\\$&')} removes it$`, 'm'));
    const removed = await cli(['serve', '--reset-network', '--data-dir', dataDir, '--network-prefix', PREFIX]);
    assert.equal(removed.code, 0, removed.output);
    assert.deepEqual(await leftovers(PREFIX, dataDir, EXTRA_TABLES), [], 'the --reset-network it names removes it all');
  });

  test('a second daemon on the network prefix of one that runs: NETWORK_PREFIX_IN_USE naming it; the first keeps its set-up', async () => {
    const first = await mkdtemp(join(tmpdir(), 'ramify-rsf-'));
    dataDirs.push(first);
    const started = await cli(['serve', '--detach', '--data-dir', first, '--network-prefix', PREFIX, '--port', '0', '--ingress-listen', '127.0.0.1:0', '--ssh-listen', 'off', '--warm-pool', 'off']);
    assert.equal(started.code, 0, started.output);
    const { pid } = JSON.parse(await readFile(join(first, 'daemon.lock'), 'utf8')) as { pid: number };
    try {
      const { code, output, dataDir } = await serve({ port: 0, ingress: '127.0.0.1:0', ssh: 'off' });
      assert.equal(code, 1, output);
      const headline = new RegExp(`^ramify: NETWORK_PREFIX_IN_USE: the network prefix '${PREFIX}' is in use by another ramify daemon \\(pid ${pid}, data directory ${first}\\): .* Give this daemon its own --network-prefix`, 'm');
      assert.match(output, headline);
      const reset = await cli(['serve', '--reset-network', '--data-dir', dataDir, '--network-prefix', PREFIX]);
      assert.equal(reset.code, 1, reset.output);
      assert.match(reset.output, /NETWORK_PREFIX_IN_USE/);
      assert.notDeepEqual(await leftovers(PREFIX, first, EXTRA_TABLES), [], 'the first daemon keeps its set-up');
    } finally {
      process.kill(pid, 'SIGTERM');
      for (let i = 0; i < 600 && dataDirHolder(first) !== null; i++) await new Promise((r) => setTimeout(r, 100));
    }
    const removed = await cli(['serve', '--reset-network', '--data-dir', first, '--network-prefix', PREFIX]);
    assert.equal(removed.code, 0, removed.output);
    assert.deepEqual(await leftovers(PREFIX, first, EXTRA_TABLES), [], 'nothing of the prefix once the first is stopped and reset');
  });
});
