/** Unit tests of the in-memory directory and the resolver's `.internal` zone over it (no kernel involved). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NetworkDirectory } from './network-directory.js';
import { internalZone, INTERNAL_TTL_SECONDS } from './internal-zone.js';
import { pairElements, peerElements } from './nft-private-networks.js';

const m = (network: string, alias: string) => ({ networkId: `net_${network}`, network, alias });

function directory(): NetworkDirectory {
  const d = new NetworkDirectory();
  d.set({ sandboxId: 'sbx_a', slot: 1, slotAddress: '10.0.0.6', memberships: [m('n1', 'a')] });
  d.set({ sandboxId: 'sbx_b', slot: 2, slotAddress: '10.0.0.10', memberships: [m('n1', 'b'), m('n2', 'b')] });
  d.set({ sandboxId: 'sbx_c', slot: 3, slotAddress: '10.0.0.14', memberships: [m('n2', 'c')] });
  return d;
}

test('peers: sharing a network, not transitively; pairs in both orders', () => {
  const d = directory();
  assert.deepEqual([...d.peersOf(1)], ['10.0.0.10']);
  assert.deepEqual([...d.peersOf(2)].sort(), ['10.0.0.14', '10.0.0.6']);
  assert.deepEqual([...d.peersOf(3)], ['10.0.0.10'], 'c and a share nothing, b sits on both');
  assert.deepEqual([...d.peersWith(3, [m('n1', 'c')])].sort(), ['10.0.0.10', '10.0.0.6'], 'as if c were on n1 instead');
  assert.equal(d.pairs().length, 4);
  assert.deepEqual(pairElements('10.0.0.6', ['10.0.0.10']).map((e) => e.key), ['10.0.0.6 . 10.0.0.10', '10.0.0.10 . 10.0.0.6']);
  assert.equal(peerElements(d).length, 4);
  d.delete(2);
  assert.deepEqual(d.pairs(), []);
});

test('.internal: members resolve members of that network only; everything else under .internal is NXDOMAIN; other names are not the zone\'s', () => {
  const zone = internalZone(directory());
  assert.deepEqual(zone.answer('10.0.0.6', 'b.n1.internal'), { addresses: ['10.0.0.10'], ttlSeconds: INTERNAL_TTL_SECONDS });
  assert.deepEqual(zone.answer('10.0.0.14', 'b.n2.internal')?.addresses, ['10.0.0.10']);
  for (const [from, name] of [['10.0.0.6', 'c.n2.internal'], ['10.0.0.14', 'a.n1.internal'], ['10.0.0.99', 'a.n1.internal'], ['10.0.0.6', 'x.n1.internal'], ['10.0.0.6', 'internal'], ['10.0.0.6', 'n1.internal'], ['10.0.0.6', 'a.b.n1.internal']]) {
    assert.deepEqual(zone.answer(from!, name!)?.addresses, [], `${name} from ${from}`);
  }
  assert.equal(zone.answer('10.0.0.6', 'example.com'), null);
  assert.equal(zone.answer('10.0.0.6', 'notinternal'), null);
});
