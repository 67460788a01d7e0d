/**
 * connectAgent's first ping: sent on a plain channel (an agent that never answers is AGENT_UNREACHABLE),
 * skipped on a channel whose hello the agent just answered (`markHelloAnswered`).
 */
import assert from 'node:assert/strict';
import { PassThrough, Duplex } from 'node:stream';
import { test } from 'node:test';
import { connectAgent } from './agent-client.js';
import { markHelloAnswered } from '../protocol/channel-hello.js';

/** A channel to an agent that reads everything and never answers. */
const silentChannel = (): Duplex => Duplex.from({ readable: new PassThrough(), writable: new PassThrough().resume() });

test('a plain channel is pinged: silence within the bound is AGENT_UNREACHABLE', async () => {
  await assert.rejects(connectAgent(silentChannel(), { pingTimeoutMs: 50 }), (err: { code?: string }) => err.code === 'AGENT_UNREACHABLE');
});

test('a channel whose hello was answered is not pinged: connectAgent resolves at once', async () => {
  const channel = silentChannel();
  const written: Buffer[] = [];
  channel.on('data', () => undefined);
  const write = channel.write.bind(channel);
  channel.write = ((chunk: Buffer, ...rest: never[]) => (written.push(chunk), write(chunk, ...rest))) as typeof channel.write;
  markHelloAnswered(channel);
  await connectAgent(channel, { pingTimeoutMs: 50 });
  assert.equal(written.length, 0, 'nothing was sent');
  channel.destroy();
});
