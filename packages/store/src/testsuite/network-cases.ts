/**
 * Conformance cases: private networks and their members.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sandbox, withStore, type StoreHarness } from './harness.js';

export function networkCases(h: StoreHarness): void {
  test('networks: unique names per team, members by alias, alias and membership conflicts, in-use networks kept', async () => {
    await withStore(h, 'networks', async (store) => {
      await store.insertSandbox(sandbox({ id: 'sbx_a' }));
      await store.insertSandbox(sandbox({ id: 'sbx_b' }));
      await store.insertNetwork({ id: 'net_1', teamId: 'default', name: 'backend', createdAt: 1 });
      await store.insertNetwork({ id: 'net_2', teamId: 'default', name: 'frontend', createdAt: 2 });
      await assert.rejects(store.insertNetwork({ id: 'net_3', teamId: 'default', name: 'backend', createdAt: 3 }), (err: { code?: string; details?: { id?: string } }) => err.code === 'NETWORK_EXISTS' && err.details?.id === 'net_1');
      assert.equal((await store.findNetworkByName('default', 'frontend'))?.id, 'net_2');
      assert.equal(await store.findNetworkByName('acme', 'frontend'), null);
      assert.deepEqual((await store.listNetworks('default')).map((n) => n.name), ['backend', 'frontend']);
      await store.addNetworkMember({ networkId: 'net_1', sandboxId: 'sbx_a', alias: 'db', attachedAt: 10 });
      await store.addNetworkMember({ networkId: 'net_1', sandboxId: 'sbx_b', alias: 'api', attachedAt: 11 });
      await store.addNetworkMember({ networkId: 'net_2', sandboxId: 'sbx_a', alias: 'db', attachedAt: 12 });
      await assert.rejects(store.addNetworkMember({ networkId: 'net_2', sandboxId: 'sbx_b', alias: 'db', attachedAt: 13 }), { code: 'NETWORK_ALIAS_TAKEN' });
      await assert.rejects(store.addNetworkMember({ networkId: 'net_1', sandboxId: 'sbx_a', alias: 'db2', attachedAt: 13 }), { code: 'CONFLICT' });
      await assert.rejects(store.addNetworkMember({ networkId: 'net_9', sandboxId: 'sbx_a', alias: 'x', attachedAt: 13 }), { code: 'NETWORK_NOT_FOUND' });
      await assert.rejects(store.addNetworkMember({ networkId: 'net_1', sandboxId: 'sbx_missing', alias: 'x', attachedAt: 13 }), { code: 'SANDBOX_NOT_FOUND' });
      assert.deepEqual((await store.membersOfNetwork('net_1')).map((m) => [m.alias, m.sandboxId, m.network]), [['api', 'sbx_b', 'backend'], ['db', 'sbx_a', 'backend']]);
      assert.deepEqual(await store.networksOfSandbox('sbx_a'), [
        { networkId: 'net_1', sandboxId: 'sbx_a', alias: 'db', attachedAt: 10, network: 'backend' },
        { networkId: 'net_2', sandboxId: 'sbx_a', alias: 'db', attachedAt: 12, network: 'frontend' },
      ]);
      await assert.rejects(store.deleteNetwork('net_1'), (err: { code?: string; details?: { sandboxes?: string[] } }) => err.code === 'NETWORK_IN_USE' && err.details?.sandboxes?.length === 2);
      await assert.rejects(store.deleteNetwork('net_9'), { code: 'NETWORK_NOT_FOUND' });
      assert.equal(await store.removeNetworkMember('net_2', 'sbx_a'), true);
      assert.equal(await store.removeNetworkMember('net_2', 'sbx_a'), false);
      await store.deleteNetwork('net_2');
      assert.equal(await store.getNetwork('net_2'), null);
    });
  });
}
