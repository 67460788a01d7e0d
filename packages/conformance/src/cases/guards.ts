/**
 * Conformance: what protects a sandbox. Pause never kills it (an established TCP connection on its
 * network card makes the pause fail with `CHECKPOINT_BLOCKED` on runtimes that cannot checkpoint it,
 * and the sandbox keeps running), and the lifetime deadline pauses (default) or kills it. The far end
 * of the connection listens on the sandbox's default gateway inside its router namespace (tcp-probe.ts).
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { Sandbox, SandboxNotFoundError } from '@ramify/sdk';
import type { SuiteContext } from '../context.js';
import { sandboxNamespaceOf } from '../host-cleanup.js';
import { GatewayPeer, routerNamespaceOf } from '../tcp-probe.js';
import { rejectsWithCode, sh, waitFor } from '../support.js';

/** Python one-liner: connect to `host:port`, say hello, keep the connection open for an hour. */
const holdConnection = (host: string, port: number): string =>
  `python3 -c "import socket,time; s=socket.create_connection(('${host}', ${port})); s.sendall(b'hello from the sandbox\\n'); time.sleep(3600)"`;

/** Register the `guards` group. */
export function registerGuardCases(ctx: SuiteContext): void {
  describe('guards: pause safety and lifetime deadlines', () => {
    after(() => ctx.killAll());

    test('pause never kills a sandbox: an open TCP connection on its network card', async () => {
      const sbx = await ctx.create();
      const gateway = /default via (\d+\.\d+\.\d+\.\d+)/.exec(await sh(sbx, 'ip -4 route show default'))?.[1];
      assert.ok(gateway, 'the sandbox has a default gateway');
      const sandboxNs = await sandboxNamespaceOf(ctx.daemon().dataDir, sbx.sandboxId, ctx.target.runtime);
      const peer = await GatewayPeer.open(routerNamespaceOf(sandboxNs), gateway);
      try {
        await sbx.files.write('/root/before-pause.txt', 'still here');
        const conn = await sbx.commands.run(holdConnection(gateway, peer.port), { background: true });
        await peer.waitForText('hello from the sandbox', 30_000);
        assert.ok(peer.connected, 'the connection is established');

        if (ctx.target.openConnectionAtPause === 'refused') {
          const err = await rejectsWithCode(sbx.pause(), 'CHECKPOINT_BLOCKED');
          assert.match(err.message, new RegExp(`${peer.port}`), 'the message names the open connection');
          assert.equal((await sbx.getInfo()).state, 'running', 'the sandbox keeps running');
          assert.equal((await sh(sbx, 'echo usable')).trim(), 'usable');
          assert.equal(await sbx.files.read('/root/before-pause.txt'), 'still here');
          assert.equal((await sbx.commands.list()).find((p) => p.pid === conn.pid)?.running, true, 'the connection holder still runs');
          assert.ok(peer.connected, 'the connection is still open');
        } else {
          assert.equal((await sbx.pause()).state, 'paused');
          assert.equal((await sbx.resume()).state, 'running');
          assert.equal(await sbx.files.read('/root/before-pause.txt'), 'still here');
          assert.equal((await sbx.commands.list()).find((p) => p.pid === conn.pid)?.running, true);
        }
        // Once the connection is gone (the peer closes first: no TIME_WAIT in the sandbox), pause works.
        await peer.close();
        await conn.kill();
        await waitFor(async () => (await sbx.pause()).state === 'paused', { timeoutMs: 60_000, intervalMs: 1_000, what: 'a pause once the connection closed' });
        assert.equal((await sbx.resume()).state, 'running');
        assert.equal(await sbx.files.read('/root/before-pause.txt'), 'still here');
      } finally {
        await peer.close();
        await sbx.kill();
      }
    });

    const deadline = 'the lifetime deadline pauses by default (resumable with its files) and kills with onTimeout: kill';
    test(deadline, ctx.caseOptions(deadline, { extended: true }), async () => {
      const [pausing, killing] = await Promise.all([ctx.create({ timeoutMs: 3_000 }), ctx.create({ timeoutMs: 3_000, onTimeout: 'kill' })]);
      assert.equal((await pausing.getInfo()).onTimeout, 'pause');
      await pausing.files.write('/root/kept.txt', 'kept across the deadline').catch((err: unknown) => {
        throw new Error(`writing within the 3 s lifetime failed: ${(err as Error).message}`);
      });
      await waitFor(async () => (await pausing.getInfo()).state === 'paused', { timeoutMs: 60_000, what: 'the deadline to pause the sandbox' });
      assert.equal((await pausing.getInfo()).endAt, null, 'the clock stops while paused');
      assert.equal((await pausing.resume({ timeoutMs: 600_000 })).state, 'running');
      assert.equal(await pausing.files.read('/root/kept.txt'), 'kept across the deadline');

      await waitFor(async () => {
        try {
          return (await Sandbox.getInfo(killing.sandboxId, ctx.conn())).state === 'killed';
        } catch (err) {
          if (err instanceof SandboxNotFoundError) return true;
          throw err;
        }
      }, { timeoutMs: 60_000, what: 'the deadline to kill the sandbox' });
      await rejectsWithCode(killing.commands.run('true'), 'SANDBOX_NOT_FOUND');
    });
  });
}
