/**
 * The agent channel's and the ingress's firewall tables as nft reads them (`nft --check`: parsed and
 * validated by the kernel's nftables, nothing installed). What they let through is tested against real
 * sandboxes in `daemon/src/real-agent-channel.test.ts`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { ingressTableScript } from '../ingress/firewall.js';
import { AGENT_FIREWALL_MARKER, agentTableScript } from './firewall.js';

const nftSkip = process.getuid?.() !== 0 ? 'needs root (nft --check)' : spawnSync('sh', ['-c', 'command -v nft']).status !== 0 ? 'nft is not installed' : false;
const spec = { prefix: 'ragt', slotRange: '10.230.0.0/16', agentPort: 49982, dialerUid: 2_147_000_001 };

test('the agent table: the dialer alone reaches the agent port, reaches nothing else, and nothing forwarded reaches it', () => {
  const script = agentTableScript(spec);
  assert.match(script, /ip daddr 10\.230\.0\.0\/16 tcp dport 49982 ct state new meta skuid != 2147000001 reject/);
  assert.match(script, /ip daddr 10\.230\.0\.0\/16 ct state new meta skuid 2147000001 tcp dport != 49982 reject/);
  assert.match(script, /hook forward[^}]*ip daddr 10\.230\.0\.0\/16 tcp dport 49982 drop/s);
  assert.ok(script.includes(AGENT_FIREWALL_MARKER));
});

test('the ingress table lets the agent dialer through when told its uid', () => {
  const plain = ingressTableScript({ prefix: 'ragt', slotRange: spec.slotRange, dialerUid: 2_147_000_000 });
  const withAgent = ingressTableScript({ prefix: 'ragt', slotRange: spec.slotRange, dialerUid: 2_147_000_000, agentDialerUid: 2_147_000_001 });
  assert.match(plain, /meta skuid != 2147000000 reject/);
  assert.match(withAgent, /meta skuid != \{ 2147000000, 2147000001 \} reject/);
});

test('both tables are valid nftables', { skip: nftSkip }, () => {
  for (const script of [agentTableScript(spec), ingressTableScript({ prefix: 'ragt', slotRange: spec.slotRange, dialerUid: 2_147_000_000, agentDialerUid: 2_147_000_001 })]) {
    const r = spawnSync('nft', ['--check', '-f', '-'], { input: script, encoding: 'utf8' });
    assert.equal(r.status, 0, `${r.stderr}\n${script}`);
  }
});
