import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { NamespaceNetwork } from './namespace-network.js';
import { run } from './exec.js';

// Real namespaces, veths and nftables, under a test-only prefix; everything is removed in `after`.
const net = new NamespaceNetwork({ prefix: 'rmtn' });
after(() => net.destroyAll());

/** Listen inside a namespace on the guest address with a one-line TCP server (a real process). */
function listenInNamespace(netnsPath: string, port: number): Promise<() => void> {
  const child = spawn('nsenter', [`--net=${netnsPath}`, process.execPath, '-e',
    `require('net').createServer(s=>s.end('hello from '+s.localAddress)).listen(${port},'0.0.0.0',()=>console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve) => child.stdout!.once('data', () => resolve(() => child.kill('SIGKILL'))));
}

function readFrom(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host, port });
    let out = '';
    s.on('data', (d) => (out += d)).on('end', () => resolve(out)).on('error', reject);
  });
}

test('two slots share the guest address and are reached through their own slot address', async () => {
  const a = await net.attach('sbx_a', 7);
  const b = await net.attach('sbx_b', 8);
  assert.equal(a.guestAddress, b.guestAddress);
  assert.notEqual(a.slotAddress, b.slotAddress);
  const stopA = await listenInNamespace(a.netnsPath, 8080);
  const stopB = await listenInNamespace(b.netnsPath, 8080);
  try {
    assert.equal(await readFrom(a.slotAddress, 8080), `hello from ${a.guestAddress}`);
    assert.equal(await readFrom(b.slotAddress, 8080), `hello from ${b.guestAddress}`);
  } finally {
    stopA();
    stopB();
  }
  assert.deepEqual(await net.listSlots(), [7, 8]);
});

test('attach repairs a guest address that was removed, detach removes everything', async () => {
  const a = await net.attach('sbx_a', 9);
  await run(['ip', '-n', a.netnsName, 'addr', 'flush', 'dev', 'eth0']);
  const again = await net.attach('sbx_a', 9);
  const addrs = await run(['ip', '-n', again.netnsName, '-o', '-4', 'addr', 'show', 'dev', 'eth0']);
  assert.match(addrs.stdout, new RegExp(`${a.guestAddress}/`));
  const ipv6 = await run(['nsenter', `--net=${a.netnsPath}`, 'cat', '/proc/sys/net/ipv6/conf/all/disable_ipv6']);
  assert.equal(ipv6.stdout.trim(), '1');
  await net.detach(9);
  assert.equal(existsSync(a.netnsPath), false);
  const link = await run(['ip', 'link', 'show', net.names(9).hostVeth]);
  assert.notEqual(link.code, 0);
});

test('a prefix whose slot range another interface already uses is refused with the interface named', async () => {
  const other = new NamespaceNetwork({ prefix: 'rmtc' });
  const [base] = other.layout.slotBase.split('.0.0');
  await run(['ip', 'link', 'add', 'rmtxa', 'type', 'veth', 'peer', 'name', 'rmtxb']);
  try {
    await run(['ip', 'addr', 'add', `${base}.0.9/30`, 'dev', 'rmtxa']);
    await assert.rejects(other.attach('sbx_c', 1), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'RUNTIME_ERROR');
      assert.match(err.message, /slot range .* of network prefix 'rmtc' is in use by (.*, )?rmtxa\b/);
      return true;
    });
    assert.equal(existsSync('/var/run/netns/rmtc-s1'), false, 'nothing was built');
  } finally {
    await run(['ip', 'link', 'del', 'rmtxa']);
    await other.destroyAll();
  }
});
