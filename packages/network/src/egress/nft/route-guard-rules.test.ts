import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tableScript } from './nft-ruleset.js';
import { guardRulesIn, isExactGuard, routeGuardRuleArgs, type IpRuleJson } from './route-guard.js';

const RANGE = '10.9.0.0/16';
const host: IpRuleJson = { priority: 1500, src: '10.9.0.0', srclen: 16, dst: '10.9.0.0', dstlen: 16, iif: 'lo', table: 'main' };
const guard: IpRuleJson = { priority: 1501, src: '10.9.0.0', srclen: 16, fwmark: '0', fwmask: '0x20000000', action: 'prohibit' };
const system: IpRuleJson[] = [{ priority: 0, src: 'all', table: 'local' }, { priority: 32766, src: 'all', table: 'main' }];

test('the guard rules: the host exemption first, then unmarked slot traffic prohibited', () => {
  assert.deepEqual(routeGuardRuleArgs({ slotRange: RANGE }), {
    host: ['pref', '1500', 'from', RANGE, 'to', RANGE, 'iif', 'lo', 'lookup', 'main'],
    guard: ['pref', '1501', 'from', RANGE, 'fwmark', '0/0x20000000', 'prohibit'],
  });
  assert.deepEqual(routeGuardRuleArgs({ slotRange: RANGE, mark: 0x400000 }).guard.slice(-2), ['0/0x400000', 'prohibit']);
  assert.throws(() => routeGuardRuleArgs({ slotRange: RANGE, mark: 3 }), RangeError);
});

test('only the rules of this range at the guard preferences are ours; exactly one of each is the guard', () => {
  const other = { ...guard, src: '10.8.0.0' };
  assert.deepEqual(guardRulesIn([...system, host, guard, other], RANGE), [host, guard]);
  assert.equal(isExactGuard([...system, host, guard, other], { slotRange: RANGE }), true);
  assert.equal(isExactGuard([...system, host], { slotRange: RANGE }), false, 'guard rule missing');
  assert.equal(isExactGuard([...system, host, guard, guard], { slotRange: RANGE }), false, 'duplicate');
  assert.equal(isExactGuard([...system, host, guard], { slotRange: RANGE, mark: 0x400000 }), false, 'another mark');
  assert.equal(isExactGuard([...system, { ...host, iif: 'eth0' }, guard], { slotRange: RANGE }), false, 'another shape');
});

test('the table marks every packet from a slot veth before routing, only with a guard mark', () => {
  const spec = { prefix: 'rme', slotRange: RANGE, resolverPort: 5300, dnsServiceAddress: '10.254.0.53' };
  assert.match(tableScript({ ...spec, guardMark: 0x20000000 }),
    /chain guard \{ type filter hook prerouting priority filter \+ 10; policy accept;\n\s+iifname "rmeh\*" meta mark set meta mark \| 0x20000000 comment "ramify-egress-guard"\n\s+\}/);
  assert.doesNotMatch(tableScript(spec), /chain guard/);
});
