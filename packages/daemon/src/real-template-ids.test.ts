/**
 * A new template built for both runtimes at once names one template from every image (REAL daemon, the
 * CLI as a child process; gVisor and QEMU; prefix `rti`). Each runtime's build used to pick its own new
 * `tpl_` id, so the microVM image's row named an id no template had and `ramify snapshot list` showed it
 * `(deleted)` (docs/design/ARCHITECTURE.md, "Template ids and their images"). RAMIFY_TEST_FULL=1 only:
 * two image builds, the microVM one ~100 s under TCG. Skipped, with the reason, when not root or without the tools.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataDirHolder } from './data-dir-lock.js';
import { forceCleanup, leftovers } from './real-egress-support.js';
import { runCli } from './testing/daemon-process.js';

const PREFIX = 'rti';
const missingTool = ['ip', 'nft', 'runsc', 'qemu-system-x86_64'].find((tool) => spawnSync('sh', ['-c', 'command -v "$1"', 'sh', tool]).status !== 0);
const skip = process.env.RAMIFY_TEST_FULL !== '1' ? 'RAMIFY_TEST_FULL=1 only: two image builds, a microVM one (~100 s under TCG)'
  : process.getuid?.() !== 0 ? 'needs root (namespaces, nftables)' : missingTool ? `${missingTool} is not installed` : false;

describe('a template built for both runtimes (real daemon)', { skip, timeout: 1_200_000 }, () => {
  let dataDir: string | undefined;
  let pid: number | undefined;
  after(async () => {
    if (!dataDir) return;
    if (pid !== undefined && dataDirHolder(dataDir) !== null) {
      process.kill(pid, 'SIGTERM');
      for (let i = 0; i < 600 && dataDirHolder(dataDir) !== null; i++) await new Promise((r) => setTimeout(r, 100));
    }
    await forceCleanup(PREFIX, dataDir);
    await runCli(['serve', '--reset-network', '--data-dir', dataDir, '--network-prefix', PREFIX]);
    assert.deepEqual(await leftovers(PREFIX, dataDir), [], 'nothing of the test is left on the host');
    await rm(dataDir, { recursive: true, force: true });
  });

  test('every image of a new template names it: one id, no (deleted) in snapshot list', async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-rti-'));
    const started = await runCli(['serve', '--detach', '--data-dir', dataDir, '--network-prefix', PREFIX, '--port', '0', '--ingress-listen', 'off', '--ssh-listen', 'off', '--warm-pool', 'off'], { timeoutMs: 200_000 });
    assert.equal(started.code, 0, started.output);
    const lock = JSON.parse(await readFile(join(dataDir, 'daemon.lock'), 'utf8')) as { pid: number; url: string };
    pid = lock.pid;
    const env = { RAMIFY_API_URL: lock.url, RAMIFY_API_KEY: (await readFile(join(dataDir, 'api-key'), 'utf8')).trim() };
    const spec = join(dataDir, 'twin.yaml');
    await writeFile(spec, 'name: twin\n');

    const built = await runCli(['template', 'build', spec, '--runtime', 'gvisor,microvm'], { env, timeoutMs: 900_000 });
    assert.equal(built.code, 0, built.output);
    const [template] = JSON.parse((await runCli(['--json', 'template', 'list'], { env })).output) as Array<{ id: string; images: Array<{ runtime: string; snapshotId: string }> }>;
    assert.deepEqual(template?.images.map((i) => i.runtime).sort(), ['gvisor', 'microvm']);
    const images = (JSON.parse((await runCli(['--json', 'snapshot', 'list'], { env })).output) as Array<{ id: string; kind: string; runtime: string; templateId: string }>)
      .filter((s) => s.kind === 'template');
    assert.deepEqual(images.map((s) => [s.runtime, s.templateId]).sort(), [['gvisor', template?.id], ['microvm', template?.id]], 'both image rows name the template');
    const table = (await runCli(['snapshot', 'list'], { env })).output;
    assert.doesNotMatch(table, /\(deleted\)/, table);
    assert.equal(table.match(/ template +(gvisor|microvm) +twin /g)?.length, 2, table);
  });
});
