/**
 * Private networks between REAL microVMs (issue 12's reach-and-isolation case on the QEMU runtime): a
 * daemon (`serve()` in-process, prefix `rnv`, egress enforcement on) that opens only the microVM runtime,
 * the base rootfs booted into a microVM template. A and B on n1, C on n2, each running the TCP and UDP
 * echo server: A and B reach each other by name over TCP and UDP; A reaches C neither by address nor by
 * name (NXDOMAIN), and C does not reach A. The slot network and the host table are the same for both
 * runtimes; this checks the microVM end (the guest behind its tap). Long under TCG (a template boot and
 * three restores), so it runs in `npm run test:full` (RAMIFY_TEST_FULL=1). Skipped, with the reason, when
 * not root, without QEMU/nft or the prepared rootfs.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Network, Sandbox } from '@ramify/sdk';
import { openRealDaemon, realRuntimeSkip, type RealDaemon } from './real-test-support.js';
import { SandboxShell } from './real-egress-probe.js';
import { echoPeers, nameProbe, reachProbes, reached, startEcho } from './real-networks-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = process.env.RAMIFY_TEST_FULL === '1'
  ? realRuntimeSkip(rootfs, ['qemu-system-x86_64', 'qemu-img', 'nft'])
  : 'long (microVMs under TCG): runs in npm run test:full (RAMIFY_TEST_FULL=1)';

let daemon: RealDaemon | undefined;
let shell: SandboxShell;
const ids = { a: '', b: '', c: '' };

describe('private networks between real microVMs', { skip, timeout: 1_800_000 }, () => {
  before(async () => {
    daemon = await openRealDaemon({ runtime: 'microvm', prefix: 'rnv', rootfs: rootfs as string, templateId: 'tpl_rnv' });
    const d = daemon;
    shell = new SandboxShell(d.call, () => d.server.url, () => d.conn.apiKey);
    await Network.create('n1', d.conn);
    await Network.create('n2', d.conn);
    for (const [key, network] of [['a', 'n1'], ['b', 'n1'], ['c', 'n2']] as const) {
      ids[key] = (await Sandbox.create({ ...d.conn, timeoutMs: 1_800_000, networks: [{ network, alias: key }] })).sandboxId;
      await startEcho(shell, ids[key]);
    }
  });

  after(async () => {
    await daemon?.close();
  });

  test('A and B reach each other by name over TCP and UDP; A cannot reach C by address or name, nor C A', async () => {
    const self = await shell.probe(ids.c, [nameProbe('self', 'c.n2.internal'), nameProbe('a', 'a.n1.internal')]);
    const cAddress = self.self?.answers?.[0];
    assert.ok(cAddress, `C resolves its own name on n2: ${JSON.stringify(self)}`);
    assert.equal(self.a?.rcode, 'NXDOMAIN');
    const since = Date.now() - 1_000;
    const [fromA, fromB] = await Promise.all([
      shell.probe(ids.a, [...reachProbes('b', 'b.n1.internal', 4), ...reachProbes('c', cAddress, 4), nameProbe('name-c', 'c.n2.internal'), nameProbe('name-b', 'b.n1.internal')]),
      shell.probe(ids.b, [...reachProbes('a', 'a.n1.internal', 4), nameProbe('name-a', 'a.n1.internal')]),
    ]);
    const aAddress = fromB['name-a']?.answers?.[0];
    const back = aAddress ? await shell.probe(ids.c, reachProbes('a', aAddress, 4)) : {};
    const why = `A ${JSON.stringify(fromA)}\nB ${JSON.stringify(fromB)}\nC ${JSON.stringify(back)}`;
    assert.deepEqual(reached(fromA, 'b'), { tcp: true, udp: true }, `A reaches B by name: ${why}`);
    assert.deepEqual(reached(fromB, 'a'), { tcp: true, udp: true }, `B reaches A by name: ${why}`);
    assert.equal(fromA['name-b']?.rcode, 'NOERROR', why);
    assert.deepEqual(reached(fromA, 'c'), { tcp: false, udp: false }, `A -> C by address: ${why}`);
    assert.equal(fromA['name-c']?.rcode, 'NXDOMAIN', `C's name for A: ${why}`);
    assert.ok(aAddress, why);
    assert.deepEqual(reached(back, 'a'), { tcp: false, udp: false }, `C -> A by address: ${why}`);
    assert.deepEqual(await echoPeers(shell, ids.c, since), [], `nobody reached C: ${why}`);
    const bPeers = new Set((await echoPeers(shell, ids.b, since)).map((p) => p.peer));
    assert.deepEqual([...bPeers], [aAddress], `B heard A only: ${why}`);
  });
});
