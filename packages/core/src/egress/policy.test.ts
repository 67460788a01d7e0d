/**
 * Unit tests of the egress rule grammar: parsing, normalisation, canonical form and every bad-input
 * example of the issue (each error names the rule).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_EGRESS_RULES, MAX_EGRESS_RULE_LENGTH, RamifyError } from '@ramify/contracts';
import { formatEgressRule, normaliseEgressPolicy, normaliseEgressRules, parseEgressPolicy, parseEgressRule, ruleForName, type EgressRule } from './policy.js';

/** Assert that parsing `rules` fails VALIDATION_FAILED with a message matching `why`, naming rule `index` (0-based). */
function rejects(rules: string[], index: number, why: RegExp): RamifyError {
  try {
    parseEgressPolicy(rules);
  } catch (err) {
    assert.ok(err instanceof RamifyError, String(err));
    assert.equal(err.code, 'VALIDATION_FAILED');
    assert.equal(err.details?.index, index);
    const rule = String(rules[index]);
    assert.equal(err.details?.rule, rule.length > 80 ? `${rule.slice(0, 80)}...` : rule);
    assert.ok(err.message.startsWith(`egress rule ${index + 1} '`), err.message);
    assert.match(err.message, why);
    return err;
  }
  assert.fail(`expected ${JSON.stringify(rules)} to be rejected`);
}

const one = (text: string): EgressRule => parseEgressRule(text);

describe('egress rules: the grammar', () => {
  test('each form parses to its kind', () => {
    assert.deepEqual(one('*'), { kind: 'any' });
    assert.deepEqual(one('pypi.org'), { kind: 'host', host: 'pypi.org', port: null });
    assert.deepEqual(one('pypi.org:443'), { kind: 'host', host: 'pypi.org', port: { from: 443, to: 443 } });
    assert.deepEqual(one('*.githubusercontent.com:443'), { kind: 'wildcard', suffix: 'githubusercontent.com', port: { from: 443, to: 443 } });
    assert.deepEqual(one('192.0.2.7'), { kind: 'ip', address: '192.0.2.7', port: null });
    assert.deepEqual(one('192.0.2.7:8000-8100'), { kind: 'ip', address: '192.0.2.7', port: { from: 8000, to: 8100 } });
    assert.deepEqual(one('10.0.0.0/8'), { kind: 'cidr', network: '10.0.0.0', prefix: 8, port: null });
    assert.deepEqual(one('0.0.0.0/0:53'), { kind: 'cidr', network: '0.0.0.0', prefix: 0, port: { from: 53, to: 53 } });
    assert.deepEqual(one('198.51.100.9/32'), { kind: 'cidr', network: '198.51.100.9', prefix: 32, port: null });
    assert.deepEqual(one('_acme.example.com'), { kind: 'host', host: '_acme.example.com', port: null });
  });

  test('normalisation: case, whitespace, trailing dot, IDN to punycode, N-N ports, duplicates', () => {
    assert.equal(formatEgressRule(one('  PyPI.ORG.  ')), 'pypi.org');
    assert.equal(formatEgressRule(one('Bücher.DE:443')), 'xn--bcher-kva.de:443');
    assert.equal(formatEgressRule(one('*.MÜNCHEN.de')), '*.xn--mnchen-3ya.de');
    assert.equal(formatEgressRule(one('ＥＸＡＭＰＬＥ.com')), 'example.com');
    assert.equal(formatEgressRule(one('example.com:80-80')), 'example.com:80');
    assert.equal(formatEgressRule(one('example.com:1-65535')), 'example.com:1-65535');
    assert.equal(formatEgressRule(one('example.com.:443')), 'example.com:443');
    assert.deepEqual(normaliseEgressRules(['Example.com', 'example.com.', '10.0.0.0/8', 'EXAMPLE.COM', '*']), ['example.com', '10.0.0.0/8', '*']);
  });

  test('the canonical form parses back to the same rule', () => {
    for (const text of ['*', 'a.example.com:1-2', '*.example.co.uk', '192.0.2.1:443', '10.0.0.0/8:22', 'xn--bcher-kva.de']) {
      const rule = one(text);
      assert.equal(formatEgressRule(rule), text);
      assert.deepEqual(one(formatEgressRule(rule)), rule);
    }
  });

  test("a single label ('none', 'deny', 'localhost', 'none:443', 'NONE.') is refused with a hint towards deny-all; stored policies keep it", () => {
    for (const [rules, label] of [[['none'], 'none'], [['pypi.org', 'deny'], 'deny'], [['localhost'], 'localhost'], [['none:443'], 'none'], [['NONE.'], 'none'], [['Bücher'], 'xn--bcher-kva']] as const) {
      const err = rejects([...rules], rules.length - 1, new RegExp(`'${label}' is a single label, not a host name`));
      assert.match(err.message, /to deny all egress use mode 'deny-all' \(CLI --deny-all, SDK egress: \{ mode: 'deny-all' \}\)/);
    }
    assert.throws(() => parseEgressRule('none'), /single label/);
    // Not single labels: '*', addresses, networks, wildcards over a name with a dot, two labels.
    assert.deepEqual(normaliseEgressRules(['*', '192.0.2.1', '10.0.0.0/8', '*.example.com', 'a.b']), ['*', '192.0.2.1', '10.0.0.0/8', '*.example.com', 'a.b']);
    // A policy stored before the check (a daemon restart, a resume) still parses: what was accepted stays accepted.
    assert.deepEqual(parseEgressPolicy({ mode: 'allowlist', rules: ['none', 'pypi.org'] }, 'stored').rules, [
      { kind: 'host', host: 'none', port: null },
      { kind: 'host', host: 'pypi.org', port: null },
    ]);
  });

  test('policy mode: a bare list keeps its meaning (no rules is open, any rule is an allowlist)', () => {
    assert.equal(parseEgressPolicy([]).mode, 'open');
    assert.equal(parseEgressPolicy(['pypi.org']).mode, 'allowlist');
    assert.equal(parseEgressPolicy(['*']).mode, 'allowlist');
    assert.equal(parseEgressPolicy({ rules: [] }).mode, 'open');
    assert.equal(parseEgressPolicy({ rules: ['pypi.org'] }).mode, 'allowlist');
  });

  test('policy mode: explicit modes, deny-all without rules; canonical form keeps the mode', () => {
    assert.deepEqual(parseEgressPolicy({ mode: 'deny-all' }), { mode: 'deny-all', rules: [] });
    assert.deepEqual(parseEgressPolicy({ mode: 'deny-all', rules: [] }), { mode: 'deny-all', rules: [] });
    assert.deepEqual(parseEgressPolicy({ mode: 'open' }), { mode: 'open', rules: [] });
    assert.deepEqual(normaliseEgressPolicy({ mode: 'allowlist', rules: ['PyPI.org', 'pypi.org'] }), { mode: 'allowlist', rules: ['pypi.org'] });
    assert.deepEqual(normaliseEgressPolicy({ mode: 'deny-all' }), { mode: 'deny-all', rules: [] });
    assert.deepEqual(normaliseEgressPolicy(['*.example.com:443']), { mode: 'allowlist', rules: ['*.example.com:443'] });
    // A canonical (stored) policy parses back to itself.
    for (const canonical of [{ mode: 'deny-all', rules: [] }, { mode: 'open', rules: [] }, { mode: 'allowlist', rules: ['10.0.0.0/8:22'] }] as const) {
      assert.deepEqual(normaliseEgressPolicy({ mode: canonical.mode, rules: [...canonical.rules] }), canonical);
    }
    assert.equal(ruleForName(parseEgressPolicy({ mode: 'deny-all' }), 'pypi.org'), null);
  });

  test('policy mode: a mode that does not fit the rules, or neither given, is refused naming the field', () => {
    const cases: Array<[Parameters<typeof parseEgressPolicy>[0], string, RegExp]> = [
      [{ mode: 'deny-all', rules: ['pypi.org'] }, 'rules', /mode 'deny-all' takes no rules/],
      [{ mode: 'open', rules: ['pypi.org'] }, 'rules', /mode 'open' takes no rules/],
      [{ mode: 'allowlist' }, 'rules', /mode 'allowlist' needs at least one rule; to deny all egress use mode 'deny-all'/],
      [{ mode: 'allowlist', rules: [] }, 'rules', /needs at least one rule/],
      [{}, 'mode', /needs rules or a mode/],
      [{ mode: 'none' as 'open' }, 'mode', /egress mode 'none' is not one of open, allowlist, deny-all/],
    ];
    for (const [input, field, message] of cases) {
      assert.throws(() => parseEgressPolicy(input), (err: unknown) => {
        assert.ok(err instanceof RamifyError);
        assert.equal(err.code, 'VALIDATION_FAILED');
        assert.equal(err.details?.field, field);
        assert.match(err.message, message);
        return true;
      }, JSON.stringify(input));
    }
  });

  test('details.issues name the field in the request and the rule it breaks, under where the policy sits', () => {
    const issuesOf = (fn: () => unknown): unknown => {
      try {
        fn();
      } catch (err) {
        assert.ok(err instanceof RamifyError && err.code === 'VALIDATION_FAILED', String(err));
        return err.details?.issues;
      }
      return assert.fail('it did not throw');
    };
    const suffix = "a wildcard cannot cover a public suffix ('com' is one)";
    // PUT /v1/sandboxes/{id}/egress: the policy is the body.
    assert.deepEqual(issuesOf(() => parseEgressPolicy({ rules: ['pypi.org', '*.com'] })), [{ path: 'body.rules.1', message: suffix, rule: '*.com' }]);
    assert.deepEqual(issuesOf(() => parseEgressPolicy({ mode: 'none' as 'open' })), [{ path: 'body.mode', message: "egress mode 'none' is not one of open, allowlist, deny-all" }]);
    assert.deepEqual(issuesOf(() => parseEgressPolicy({ mode: 'deny-all', rules: ['pypi.org'] })), [
      { path: 'body.rules', message: "egress mode 'deny-all' takes no rules (give the rules alone, or mode 'allowlist', to allow only what they name)" },
    ]);
    const many = Array.from({ length: MAX_EGRESS_RULES + 1 }, (_, i) => `h${i}.example.com`);
    assert.deepEqual(issuesOf(() => parseEgressPolicy({ rules: many })), [{ path: 'body.rules', message: `must be an array of at most ${MAX_EGRESS_RULES} rules, got ${MAX_EGRESS_RULES + 1}` }]);
    // A create's `egress`: a bare list or { mode, rules }.
    assert.deepEqual(issuesOf(() => normaliseEgressPolicy(['pypi.org', 'pypi.org', 'https://x.org'], 'body.egress')), [
      { path: 'body.egress.2', message: "a rule is a host, address or network, not a URL (write 'example.com:443', not 'https://example.com')", rule: 'https://x.org' },
    ]);
    assert.deepEqual(issuesOf(() => normaliseEgressPolicy({ mode: 'allowlist', rules: [] }, 'body.egress')), [
      { path: 'body.egress.rules', message: "egress mode 'allowlist' needs at least one rule; to deny all egress use mode 'deny-all'" },
    ]);
    assert.deepEqual(issuesOf(() => normaliseEgressPolicy({ rules: [7 as unknown as string] }, 'body.egress')), [{ path: 'body.egress.rules.0', message: 'a rule must be a string', rule: '7' }]);
  });

  test('name matching: host rules exactly, wildcards strictly below their suffix, * everything; addresses never', () => {
    const policy = parseEgressPolicy(['10.0.0.0/8', 'pypi.org:443', '*.example.com']);
    const match = (name: string): string | null => {
      const rule = ruleForName(policy, name);
      return rule && formatEgressRule(rule);
    };
    assert.equal(match('pypi.org'), 'pypi.org:443');
    assert.equal(match('files.pypi.org'), null);
    assert.equal(match('a.example.com'), '*.example.com');
    assert.equal(match('a.b.example.com'), '*.example.com');
    assert.equal(match('example.com'), null);
    assert.equal(match('badexample.com'), null);
    assert.equal(match('10.0.0.1'), null);
    assert.deepEqual(ruleForName(parseEgressPolicy(['*']), 'anything.test'), { kind: 'any' });
    assert.equal(ruleForName(parseEgressPolicy([]), 'pypi.org'), null);
  });

  test('a rule parsed alone names itself without a position', () => {
    assert.throws(() => parseEgressRule('*.com'), (err: unknown) => {
      assert.ok(err instanceof RamifyError);
      assert.equal(err.message, "egress rule '*.com': a wildcard cannot cover a public suffix ('com' is one)");
      assert.deepEqual(err.details, { rule: '*.com' });
      return true;
    });
  });
});

describe('egress rules: bad input is a 400 naming the rule', () => {
  test('wildcards over a public suffix', () => {
    const err = rejects(['pypi.org', '10.0.0.0/8', '*.com'], 2, /a wildcard cannot cover a public suffix/);
    assert.equal(err.message, "egress rule 3 '*.com': a wildcard cannot cover a public suffix ('com' is one)");
    rejects(['*.co.uk'], 0, /public suffix \('co\.uk' is one\)/);
    rejects(['*.COM.'], 0, /public suffix/);
    rejects(['*.internal'], 0, /public suffix/);
    // Private-section suffixes belong to one owner: allowed.
    assert.deepEqual(normaliseEgressRules(['*.githubusercontent.com', '*.github.io', '*.example.co.uk']), ['*.githubusercontent.com', '*.github.io', '*.example.co.uk']);
  });

  test('a wildcard anywhere but as the whole first label', () => {
    for (const bad of ['foo.*.com', '*foo.com', 'foo*.com', '*.*.example.com', '**.example.com', 'example.*']) {
      rejects(['example.org', bad], 1, /a wildcard is only allowed as the whole first label/);
    }
    rejects(['*.10.0.0.1'], 0, /a wildcard covers names, not IP addresses/);
    rejects(['*:443'], 0, /'\*' allows every destination and takes no port/);
  });

  test('ports 0 and 70000, non-numbers, reversed ranges, missing ports', () => {
    rejects(['example.com:0'], 0, /port 0 is outside 1-65535/);
    rejects(['example.com', '192.0.2.1:70000'], 1, /port 70000 is outside 1-65535/);
    rejects(['example.com:443-70000'], 0, /port 70000 is outside 1-65535/);
    rejects(['example.com:https'], 0, /port 'https' is not a number or a range N-M/);
    rejects(['example.com:-1'], 0, /not a number or a range/);
    rejects(['example.com:9000-80'], 0, /reversed/);
    rejects(['example.com:'], 0, /the port is missing/);
    rejects([':443'], 0, /missing before the port/);
  });

  test('malformed CIDRs and addresses', () => {
    rejects(['10.0.0.0/33'], 0, /prefix length '\/33' is not a number from 0 to 32/);
    rejects(['300.1.1.1/8'], 0, /'300\.1\.1\.1' is not a valid IPv4 address/);
    rejects(['10.0.0.0/'], 0, /prefix length/);
    rejects(['10.0.0.0/08'], 0, /prefix length/);
    rejects(['10.0.0/8'], 0, /not a valid IPv4 address/);
    rejects(['10.0.0.0/8/9'], 0, /not a valid CIDR/);
    rejects(['example.com/24'], 0, /not a valid CIDR/);
    rejects(['10.0.0.1/8'], 0, /host bits set: did you mean '10\.0\.0\.0\/8' \(the network\) or '10\.0\.0\.1' \(one address\)\?/);
    rejects(['192.168.1.255/23'], 0, /did you mean '192\.168\.0\.0\/23'/);
    rejects(['256.0.0.1'], 0, /not a valid IPv4 address/);
    rejects(['1.2.3'], 0, /not a valid IPv4 address/);
    rejects(['010.0.0.1'], 0, /no leading zeros/);
    rejects(['0x7f.0.0.1'], 0, /not a valid IPv4 address/);
  });

  test('IPv6 is refused with the reason', () => {
    for (const bad of ['::1', '2001:db8::1', '2001:db8::/32', '[2001:db8::1]:443', '[::1]']) rejects([bad], 0, /IPv6 destinations cannot be allowed: sandboxes have no IPv6 egress/);
  });

  test('bad host names, URLs, empty and over-long rules', () => {
    rejects([''], 0, /empty rule/);
    rejects(['   '], 0, /empty rule/);
    rejects(['https://example.com'], 0, /not a URL/);
    rejects(['exa mple.com'], 0, /cannot appear in a host name/);
    rejects(['a.com,b.com'], 0, /cannot appear/);
    rejects(['a..com'], 0, /empty label/);
    rejects(['.a.com'], 0, /empty label/);
    rejects(['-a.com'], 0, /the label '-a' is not valid/);
    rejects(['xn--zz.com'], 0, /not a valid host name/);
    rejects([`${'a'.repeat(64)}.com`], 0, /longer than 63 characters/);
    rejects([Array.from({ length: 60 }, () => 'abcd').join('.')], 0, /longer than 253 characters/);
    const long = rejects([`${'a'.repeat(MAX_EGRESS_RULE_LENGTH)}.com`], 0, new RegExp(`longer than ${MAX_EGRESS_RULE_LENGTH} characters`));
    assert.ok(long.message.length < 200, 'an over-long rule is quoted shortened');
  });

  test(`more than ${MAX_EGRESS_RULES} rules: 10,000 are refused, naming the first one over the limit`, () => {
    const rules = Array.from({ length: 10_000 }, (_, i) => `h${i}.example.com`);
    const err = rejects(rules, MAX_EGRESS_RULES, /too many rules \(10000\); a policy holds at most 1000/);
    assert.equal(err.details?.count, 10_000);
    assert.equal(parseEgressPolicy(rules.slice(0, MAX_EGRESS_RULES)).rules.length, MAX_EGRESS_RULES);
  });
});
