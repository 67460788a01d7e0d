/** nft's environment: the allocator tunables are added to any already set, and a real nft runs with them. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NFT_GLIBC_TUNABLES, nftEnv } from './nft-process.js';
import { run } from './exec.js';

test('adds the tunables, after any the daemon already runs with', () => {
  assert.equal(nftEnv({ PATH: '/usr/bin' })['GLIBC_TUNABLES'], NFT_GLIBC_TUNABLES);
  assert.equal(nftEnv({ GLIBC_TUNABLES: 'glibc.pthread.rseq=0' })['GLIBC_TUNABLES'], `glibc.pthread.rseq=0:${NFT_GLIBC_TUNABLES}`);
  assert.equal(nftEnv({ PATH: '/usr/bin' })['PATH'], '/usr/bin');
});

test('nft runs with them', { skip: process.getuid?.() !== 0 ? 'needs root' : false }, async () => {
  const r = await run(['nft', '--version'], undefined, { env: nftEnv() });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /nftables v\d/);
});
