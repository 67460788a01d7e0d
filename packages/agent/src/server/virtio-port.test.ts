/** Device-level pieces of the virtio transport on real character devices (/dev/null, a pty). */
import assert from 'node:assert/strict';
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { eventually } from '../test-support/agent-harness.js';
import { buildPtyPort, FAKE_VIRTIO_PORT_SKIP, startFakeVirtioPort } from '../test-support/fake-virtio-port.js';
import { openCharDeviceStream } from './char-device-stream.js';
import { probeHost, resolvePortPath, serveVirtioPort, type HostProbe } from './virtio-port.js';

const FLAGS = constants.O_RDWR | constants.O_NONBLOCK | constants.O_NOCTTY;
let dir: string;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'ramify-virtio-port-'));
});

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

test('a device that reads EOF has no host (what a virtio port with no host connected reads)', () => {
  const fd = openSync('/dev/null', FLAGS);
  try {
    assert.deepEqual(probeHost(fd), { host: 'absent' });
  } finally {
    closeSync(fd);
  }
});

test('on a pty port: EAGAIN means a silent host, data is kept, hangup reads as no host; the stream runs on epoll', { skip: FAKE_VIRTIO_PORT_SKIP, timeout: 60_000 }, async () => {
  const work = join(dir, 'pty');
  mkdirSync(work);
  const port = await startFakeVirtioPort({ dir: work, helper: buildPtyPort(work) });
  const host = connect(port.hostSocketPath);
  const fromGuest: Buffer[] = [];
  host.on('data', (d: Buffer) => fromGuest.push(d));
  try {
    let fd = -1;
    await eventually(() => {
      try {
        fd = openSync(port.portPath, FLAGS);
        return true;
      } catch {
        return false;
      }
    }, 'port linked');
    assert.deepEqual(probeHost(fd), { host: 'present' });
    host.write('abc');
    let probe: HostProbe = { host: 'present' };
    await eventually(() => (probe = probeHost(fd)).host !== 'present' || probe.initial !== undefined, 'data arrives');
    assert.deepEqual(probe, { host: 'present', initial: Buffer.from('abc') });

    const stream = openCharDeviceStream(fd);
    const toGuest: Buffer[] = [];
    stream.on('data', (d: Buffer) => toGuest.push(d));
    const ended = new Promise<void>((resolve) => stream.once('end', () => resolve()));
    const big = Buffer.alloc(1024 * 1024, 0xa5);
    stream.write(big);
    host.write('def');
    await eventually(() => Buffer.concat(fromGuest).length === big.length && Buffer.concat(toGuest).toString() === 'def', 'both directions');
    assert.ok(Buffer.concat(fromGuest).equals(big));
    host.destroy(); // The fake port hangs the pty up, as QEMU tells the guest the host left.
    await ended;
    stream.destroy();
  } finally {
    host.destroy();
    await port.close();
  }
});

test('a missing /dev/virtio-ports link is found by name in sysfs; other paths stay as given', () => {
  const sysfs = join(dir, 'sysfs');
  mkdirSync(join(sysfs, 'vport0p0'), { recursive: true });
  mkdirSync(join(sysfs, 'vport0p1'), { recursive: true });
  mkdirSync(join(sysfs, 'vport1p2'), { recursive: true });
  writeFileSync(join(sysfs, 'vport0p1', 'name'), 'org.other\n');
  writeFileSync(join(sysfs, 'vport1p2', 'name'), 'org.ramify.test0\n');
  assert.equal(resolvePortPath('/dev/virtio-ports/org.ramify.test0', sysfs), '/dev/vport1p2');
  assert.equal(resolvePortPath('/dev/virtio-ports/org.ramify.nope', sysfs), '/dev/virtio-ports/org.ramify.nope');
  assert.equal(resolvePortPath(join(dir, 'elsewhere'), sysfs), join(dir, 'elsewhere'));
});

test('serving a port that does not exist yet waits quietly and stops on close', async () => {
  const logs: string[] = [];
  const server = serveVirtioPort({ path: join(dir, 'no-such-port'), pollMs: 10 }, () => assert.fail('no session expected'), (l) => logs.push(l));
  await eventually(() => logs.length > 0, 'logged the missing device');
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(logs.length, 1, 'the same problem is logged once');
  assert.match(logs[0], /ENOENT/);
  assert.equal(server.connected, false);
  await server.close();
});
