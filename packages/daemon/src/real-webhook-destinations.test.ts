/**
 * Webhook destinations closed by default (issue 15, governance), end to end: a REAL daemon (`serve()`
 * in-process, prefix `rmwg`, gVisor) and a real HTTP receiver on loopback. Without
 * `--webhook-allow-private`: a webhook to `http://127.0.0.1:PORT` is refused at create through the CLI
 * (400, saying why and which flag lifts it); one to `http://localhost:PORT` is taken (a name) but a
 * sandbox's `created` event is NOT delivered: the receiver sees nothing and the delivery log (CLI
 * `webhook deliveries`) says the destination is a loopback address, one attempt, `failed`. A daemon
 * started with the allowance delivers the same webhook's event to the same receiver. Skipped, with the
 * reason, when not root or without the tools.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox } from '@ramify/sdk';
import { openRealDaemon, realRuntimeSkip, until, type RealDaemon } from './real-test-support.js';
import { cli } from './real-ssh-support.js';
import { startPeer, type Peer } from './real-events-support.js';

const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs);
const PREFIX = 'rmwg';
const TEMPLATE = 'tpl_rmwg';

let receiver: Peer | undefined;
let daemon: RealDaemon | undefined;

interface DeliveryView { status: string; eventType: string; attempts: Array<{ statusCode: number | null; error: string | null }> }

/** Add a webhook through the CLI on the daemon; its id. */
async function addWebhook(d: RealDaemon, url: string): Promise<string> {
  const made = await cli(d.conn, ['webhook', 'add', url, '--events', 'sandbox.lifecycle.created', '--json']);
  assert.equal(made.code, 0, made.stderr);
  return (JSON.parse(made.stdout) as { id: string }).id;
}

/** Create a sandbox (its `created` event) and wait until the webhook's delivery of it is settled; the delivery log. */
async function createAndSettle(d: RealDaemon, webhookId: string): Promise<DeliveryView[]> {
  await Sandbox.create({ ...d.conn, template: TEMPLATE, timeoutMs: 600_000 });
  let log: DeliveryView[] = [];
  await until(async () => {
    const listed = await cli(d.conn, ['webhook', 'deliveries', webhookId, '--json']);
    log = (JSON.parse(listed.stdout) as { deliveries: DeliveryView[] }).deliveries;
    return log.length > 0 && log.every((x) => x.status !== 'pending');
  }, 'the delivery is settled');
  return log;
}

describe('webhook destinations through a real daemon (gVisor)', { skip, timeout: 300_000 }, () => {
  before(async () => {
    receiver = await startPeer(() => 200);
  });
  after(async () => {
    await daemon?.close();
    await receiver?.close();
  });

  test('a loopback receiver: refused by default (nothing sent, the log says why), delivered with the allowance', async () => {
    const peer = receiver as Peer;
    daemon = await openRealDaemon({ runtime: 'gvisor', prefix: PREFIX, rootfs: rootfs as string, templateId: TEMPLATE });
    const literal = await cli(daemon.conn, ['webhook', 'add', peer.url]);
    assert.equal(literal.code, 1, literal.stdout);
    assert.match(literal.stderr, /destination 127\.0\.0\.1 is a loopback address: webhooks reach public addresses only; start the daemon with --webhook-allow-private to allow it/);
    const byName = peer.url.replace('127.0.0.1', 'localhost');
    const refusedLog = await createAndSettle(daemon, await addWebhook(daemon, byName));
    assert.deepEqual(refusedLog.map((x) => [x.eventType, x.status, x.attempts.length, x.attempts[0]?.statusCode]), [['sandbox.lifecycle.created', 'failed', 1, null]], 'failed at once, not retried');
    assert.match(refusedLog[0]?.attempts[0]?.error ?? '', /^localhost: destination (127\.0\.0\.1|::1) is a loopback address: webhooks reach public addresses only; start the daemon with --webhook-allow-private to allow it$/);
    assert.equal(peer.received.length, 0, 'the receiver saw nothing');
    await daemon.close();
    daemon = undefined;

    daemon = await openRealDaemon({ runtime: 'gvisor', prefix: PREFIX, rootfs: rootfs as string, templateId: TEMPLATE, coreOptions: { webhooks: { allowPrivateDestinations: true } } });
    const deliveredLog = await createAndSettle(daemon, await addWebhook(daemon, byName));
    assert.deepEqual(deliveredLog.map((x) => [x.status, x.attempts.map((a) => a.statusCode)]), [['delivered', [200]]]);
    assert.equal(peer.received.length, 1, 'the receiver got the event');
    assert.equal((JSON.parse(peer.received[0]?.body.toString('utf8') ?? '{}') as { type?: string }).type, 'sandbox.lifecycle.created');
  });
});
