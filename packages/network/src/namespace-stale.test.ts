/**
 * Namespace files left behind (real namespaces, veths and nftables under the test-only prefix `rsn`;
 * everything is removed in `after`): a file at a slot's /run/netns path with no namespace mounted on it
 * (a reboot with /run/netns on disk, or the mount namespace that held the bind mount gone) is not taken
 * for the slot's namespace: preparing the slot makes a live one in its place.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { after, test } from 'node:test';
import { run } from './exec.js';
import { isLiveNamespace, NamespaceNetwork } from './namespace-network.js';

const skip = process.getuid?.() !== 0 ? 'needs root (network namespaces)' : false;
const net = new NamespaceNetwork({ prefix: 'rsn' });
after(() => net.destroyAll());

/** The guest address is on the slot's eth0, read through the namespace file (fails on a dead one). */
async function guestAddressIn(netnsName: string): Promise<string> {
  const r = await run(['ip', '-n', netnsName, '-o', '-4', 'addr', 'show', 'dev', 'eth0']);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}

test('plain files at a slot\'s namespace paths, its ready marker kept, are replaced by live namespaces when the slot is prepared', { skip }, async () => {
  // What a reboot leaves when /run is on a disk (as on this machine): the files, the marker, no namespaces.
  const path = `/run/netns/${net.names(3).sandboxNs}`;
  await mkdir('/run/netns', { recursive: true });
  await mkdir('/run/ramify-net', { recursive: true });
  for (const ns of [net.names(3).sandboxNs, net.names(3).routerNs]) await writeFile(`/run/netns/${ns}`, '');
  await writeFile('/run/ramify-net/rsn-3.ready', '');
  assert.equal(isLiveNamespace(path), false, 'an empty file is not a namespace');
  const attached = await net.attach('sbx_stale', 3);
  assert.equal(isLiveNamespace(attached.netnsPath), true);
  assert.equal(isLiveNamespace(`/run/netns/${net.names(3).routerNs}`), true);
  assert.match(await guestAddressIn(attached.netnsName), new RegExp(`${attached.guestAddress}/`));
});

test('a built slot whose namespace file went dead (unmounted, marker kept) is rebuilt, not used', { skip }, async () => {
  const first = await net.attach('sbx_dead', 4);
  assert.equal(isLiveNamespace(first.netnsPath), true);
  // What a gone mount namespace leaves in the root one: the file, no namespace on it; the ready marker stays.
  const umount = await run(['umount', first.netnsPath]);
  assert.equal(umount.code, 0, umount.stderr);
  assert.equal(existsSync(first.netnsPath), true);
  assert.equal(isLiveNamespace(first.netnsPath), false);
  const again = await net.attach('sbx_dead', 4);
  assert.equal(isLiveNamespace(again.netnsPath), true);
  assert.match(await guestAddressIn(again.netnsName), new RegExp(`${again.guestAddress}/`));
  await net.detach(4);
  assert.equal(existsSync(again.netnsPath), false);
});
