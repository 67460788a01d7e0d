/** The one-file bundle (what sandboxes run) works on its own: build it fresh, serve and bridge from it. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { connectVirtioAgent } from '../client/virtio-channel.js';
import { collector, startAgent } from '../test-support/agent-harness.js';
import { buildPtyPort, FAKE_VIRTIO_PORT_SKIP, startFakeVirtioPort } from '../test-support/fake-virtio-port.js';

const BUNDLE_SCRIPT = fileURLToPath(new URL('../../scripts/bundle.mjs', import.meta.url));

let dir: string;
let outfile: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-agent-bundle-'));
  outfile = join(dir, 'agent.mjs');
  await promisify(execFile)(process.execPath, [BUNDLE_SCRIPT, '--outfile', outfile]);
});

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

test('the bundled agent.mjs serves and bridges with no node_modules beside it', { timeout: 120_000 }, async () => {
  const text = readFileSync(outfile, 'utf8');
  assert.doesNotMatch(text, /from\s*["'](@msgpack|@ramify|zod)/, 'dependencies are inlined');
  const agent = await startAgent({ entry: outfile });
  try {
    const { client } = await agent.connect();
    assert.equal((await client.agentInfo()).protocol, 1);
    const c = collector();
    await client.start({ cmd: 'printf bundled; exit 7' }, c.handlers);
    assert.equal((await c.exited).exitCode, 7);
    assert.equal(c.stdout().toString(), 'bundled');
    const parts: Uint8Array[] = [];
    for await (const chunk of client.readFile(outfile)) parts.push(chunk);
    assert.equal(Buffer.concat(parts).toString('utf8'), text);
  } finally {
    await agent.stop();
  }
});

test('the bundled agent.mjs serves a virtio port', { timeout: 120_000, skip: FAKE_VIRTIO_PORT_SKIP }, async () => {
  const port = await startFakeVirtioPort({ dir, helper: buildPtyPort(dir) });
  const agent = await startAgent({ entry: outfile, args: ['--virtio-port', port.portPath] });
  try {
    const client = await connectVirtioAgent(port.hostSocketPath, { timeoutMs: 60_000 });
    const c = collector();
    await client.start({ cmd: 'printf over-virtio; exit 4' }, c.handlers);
    assert.equal((await c.exited).exitCode, 4);
    assert.equal(c.stdout().toString(), 'over-virtio');
    await client.close();
  } finally {
    await agent.stop();
    await port.close();
  }
});
