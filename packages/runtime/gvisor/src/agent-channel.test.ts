/**
 * `openChannel` against the real agent bundle run on the host (`serve --socket --tcp-port`): the bridge
 * (here a plain connection to the agent's unix socket, what `runsc exec` of socat gives) sets the first
 * key; later channels go over TCP with it and hand the agent the incarnation's key; a key the agent does
 * not hold falls back to the bridge, which sets the key again; an image without an agent port, or a
 * runtime without a dialer, uses the bridge alone. Each channel then carries the agent protocol.
 */
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { AGENT_BUNDLE_PATH, connectAgent } from '@ramify/agent';
import { bootedAgent, imageAgent, openChannel, restoredAgent, type InstanceAgent, type OpenChannelDeps } from './agent-channel.js';

let dir: string;
let agent: ChildProcess;
const port = randomInt(20_000, 60_000);

const dial = (host: string, p: number): Promise<Socket> =>
  new Promise((resolve, reject) => {
    const s = connect({ host, port: p });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });

/** Which way each channel went, and what the runtime was told. */
function deps(used: string[], fallbacks: string[], withDial = true): OpenChannelDeps {
  return {
    ...(withDial ? { dial: async (h: string, p: number) => (used.push('tcp'), dial(h, p)) } : {}),
    bridge: (): Duplex => (used.push('bridge'), connect(join(dir, 'agent.sock'))),
    persist: async () => undefined,
    onFallback: (reason) => fallbacks.push(reason),
  };
}

async function pings(stream: Duplex): Promise<void> {
  const client = await connectAgent(stream, { pingTimeoutMs: 10_000 });
  await client.ping();
  await client.close();
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ramify-agent-channel-'));
  agent = spawn(process.execPath, [AGENT_BUNDLE_PATH, 'serve', '--socket', join(dir, 'agent.sock'), '--tcp-port', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve) => agent.stderr!.on('data', (d: Buffer) => d.toString().includes('TCP port') && resolve()));
});
after(async () => {
  agent.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

test('booted: the bridge gives the agent its first key; then TCP, and every restored incarnation gets a key of its own', async () => {
  const booted = bootedAgent(['node', 'agent.mjs', 'serve', '--tcp-port', String(port)]) as InstanceAgent;
  assert.deepEqual([booted.tcpPort, booted.mayHold], [port, []]);
  const used: string[] = [];
  const fallbacks: string[] = [];
  await pings(await openChannel('127.0.0.1', booted, deps(used, fallbacks)));
  assert.deepEqual(used, ['bridge']);
  assert.deepEqual(fallbacks, ['the agent holds no key yet']);
  assert.deepEqual(booted.mayHold, [booted.key]);
  await pings(await openChannel('127.0.0.1', booted, deps(used, fallbacks)));
  assert.deepEqual(used, ['bridge', 'tcp'], 'the next channel over TCP');
  // An image of it, restored twice (a fork x2): each incarnation's first hello names its own key.
  const image = imageAgent(booted);
  const [first, second] = [restoredAgent(image) as InstanceAgent, restoredAgent(image) as InstanceAgent];
  assert.notEqual(first.key, second.key);
  await pings(await openChannel('127.0.0.1', first, deps(used, fallbacks)));
  assert.deepEqual(first.mayHold, [first.key]);
  assert.deepEqual(used.slice(2), ['tcp']);
  assert.equal(fallbacks.length, 1, fallbacks.join('; '));
  // The one agent here now holds `first`'s key: `second`'s image key opens nothing, so it falls back to
  // the bridge, which sets its key; TCP works with it afterwards.
  await pings(await openChannel('127.0.0.1', second, deps(used, fallbacks)));
  assert.deepEqual(used.slice(3), ['tcp', 'bridge']);
  assert.match(fallbacks[1] ?? '', /refused the key/);
  await pings(await openChannel('127.0.0.1', second, deps(used, fallbacks)));
  assert.deepEqual(used.slice(5), ['tcp']);
});

test('no agent port (an image made before it) or no dialer: the bridge, without a hello for the former', async () => {
  const used: string[] = [];
  await pings(await openChannel('127.0.0.1', restoredAgent(undefined), deps(used, [])));
  const noDial = restoredAgent({ tcpPort: port, keys: ['00'.repeat(32)] }) as InstanceAgent;
  await pings(await openChannel('127.0.0.1', noDial, deps(used, [], false)));
  assert.deepEqual(used, ['bridge', 'bridge']);
  assert.deepEqual(noDial.mayHold, [noDial.key], 'the bridge set the key');
});
