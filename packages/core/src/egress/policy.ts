/**
 * Egress policy: the grammar of allow rules, their validation and their one canonical spelling.
 *
 * A policy has a mode: `open` (no rules: everything allowed but what is always closed), `allowlist`
 * (default-deny: an ordered list of at least one rule) or `deny-all` (no rules: nothing allowed). Rules are
 * one string each:
 * `*` (everything) · `host` · `*.host` (subdomains) · `host:port` · `ip` · `ip:port` · `cidr` · `cidr:port`,
 * where a port is `N` or `N-M` within 1-65535 and addresses are IPv4 (IPv6 egress is dropped, so IPv6 rules
 * are refused rather than silently meaningless). A bare rule list keeps its old meaning: no rules = open,
 * any rule = allowlist. A host has at least two labels: a single label (`none`, `deny`, `localhost`) is
 * refused with a hint, since it is no reachable host and usually meant something else (deny-all); stored
 * policies that already hold one keep working.
 *
 * Normalisation: surrounding whitespace trimmed, host names lowercased, one trailing dot removed, IDN
 * converted to punycode (`domainToASCII`, UTS #46), single-port ranges `N-N` written `N`, duplicate rules
 * (after normalisation) dropped, first one kept. A CIDR whose host bits are set (`10.0.0.1/8`) is an
 * error, never silently widened or narrowed: the caller meant either `10.0.0.0/8` or `10.0.0.1/32`, and
 * guessing wrong would allow or deny the wrong network.
 *
 * Wildcards: only a whole leading `*.` label, and never over a public suffix (`*.com`, `*.co.uk`,
 * `*.internal`: a name the Public Suffix List's ICANN section, with its default rule for unknown top-level
 * names, calls public). Private-section suffixes such as `githubusercontent.com` are one owner's names,
 * so `*.githubusercontent.com` is allowed. A wildcard matches names strictly below its suffix, at any
 * depth; the suffix itself needs its own `host` rule.
 */
import { domainToASCII } from 'node:url';
import { EgressMode, MAX_EGRESS_RULES, MAX_EGRESS_RULE_LENGTH, RamifyError, type EgressPolicyRequest } from '@ramify/contracts';
import { getDomain } from 'tldts';

/** An inclusive port range; a single port has `from === to`. */
export interface PortRange {
  from: number;
  to: number;
}

/** One parsed allow rule. `port: null` = every port. */
export type EgressRule =
  | { kind: 'any' }
  /** Exactly this name (ASCII, lowercase, punycode for IDN, no trailing dot). */
  | { kind: 'host'; host: string; port: PortRange | null }
  /** Every name strictly below `suffix` (`*.example.com` matches `a.example.com`, `a.b.example.com`, not `example.com`). */
  | { kind: 'wildcard'; suffix: string; port: PortRange | null }
  /** One IPv4 address, dotted quad. */
  | { kind: 'ip'; address: string; port: PortRange | null }
  /** An IPv4 network: `network` has no host bits set; `prefix` 0-32. */
  | { kind: 'cidr'; network: string; prefix: number; port: PortRange | null };

/** A validated, normalised policy: its mode and rules (in the order given, duplicates removed). */
export interface EgressPolicy {
  /** `open` and `deny-all` have no rules; `allowlist` has at least one. */
  mode: EgressMode;
  rules: readonly EgressRule[];
}

/** The open policy (no rules). */
export const OPEN_EGRESS_POLICY: EgressPolicy = { mode: 'open', rules: [] };
/** The deny-all policy: nothing leaves. */
export const DENY_ALL_EGRESS_POLICY: EgressPolicy = { mode: 'deny-all', rules: [] };

/** A policy in canonical strings: what the store keeps, snapshots record and the API returns. */
export interface CanonicalEgressPolicy {
  mode: EgressMode;
  /** Canonical rules, in order; empty unless `mode` is `allowlist`. */
  rules: string[];
}

/** What callers give: a bare rule list (`[]` = open, any rule = allowlist) or `{ mode?, rules? }`. */
export type EgressPolicyInput = readonly string[] | EgressPolicyRequest;

/**
 * Where a policy comes from: `request` (new input: every check) or `stored` (validated when it was set,
 * maybe by an older daemon: what was accepted then stays accepted, i.e. single-label hosts).
 */
export type EgressPolicyOrigin = 'request' | 'stored';

/** Longest host name (RFC 1035), characters. */
const MAX_HOST_LENGTH = 253;
const IPV4_OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = new RegExp(`^${IPV4_OCTET}(?:\\.${IPV4_OCTET}){3}$`);
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
/** The WHATWG URL parser reads a host whose last label is a number as an IPv4 address (`1.2.3` = `1.2.0.3`). */
const NUMERIC_LAST_LABEL = /(?:^|\.)(?:\d+|0x[0-9a-f]*)$/i;

/**
 * Parse one rule.
 * @throws RamifyError `VALIDATION_FAILED` `egress rule '<text>': <why>` with `details.rule`.
 */
export function parseEgressRule(text: string): EgressRule {
  return parseAt(text, null, 'request', null);
}

/**
 * Parse a whole policy: a bare rule list, or `{ mode, rules }` (a stored policy is one too). The mode
 * defaults from the rules (none: `open`, some: `allowlist`); `open` and `deny-all` take no rules, and
 * `allowlist` needs one. At most {@link MAX_EGRESS_RULES} rules, each valid; duplicates (after
 * normalisation) are dropped, first one kept. `origin` `stored` accepts what an earlier daemon accepted
 * (single-label hosts); default `request`.
 * @throws RamifyError `VALIDATION_FAILED`: naming the first bad rule, `egress rule 3 '*.com': ...` (the message
 *   counts from 1), `details: { rule, index }` (`index` 0-based; too many rules names the first one over the
 *   limit); or, with `details.field` `mode`/`rules`, a mode that does not fit the rules (or neither given).
 *   `details.issues` names the field in the request: `[{ path, message, rule? }]`, the path under `at`, where
 *   the policy sits in the request (`body` for `PUT /v1/sandboxes/{id}/egress`, `body.egress` in a create):
 *   `body.rules.2` (`body.egress.2` for a bare list), `body.mode`; `message` the rule it breaks.
 */
export function parseEgressPolicy(input: EgressPolicyInput, origin: EgressPolicyOrigin = 'request', at = 'body'): EgressPolicy {
  const { mode, rules } = modeAndRules(input, at);
  return { mode, rules: parseRules(rules, origin, isRuleList(input) ? at : `${at}.rules`) };
}

/** The mode of `input` and its rule texts, checked to fit each other; `at`: where `input` sits in the request. */
function modeAndRules(input: EgressPolicyInput, at: string): { mode: EgressMode; rules: readonly string[] } {
  const list = isRuleList(input);
  const request: { mode?: EgressMode; rules?: readonly string[] } = list ? { rules: input } : input;
  const fail = (message: string, field: 'mode' | 'rules'): never => {
    throw policyError(message, field, list ? at : `${at}.${field}`);
  };
  if (typeof request !== 'object' || request === null) fail("an egress policy is a list of rules or { mode, rules }", 'rules');
  const { rules = [] } = request;
  if (!Array.isArray(rules)) fail('egress rules must be a list of strings', 'rules');
  if (request.mode !== undefined && !EgressMode.safeParse(request.mode).success) fail(`egress mode '${String(request.mode)}' is not one of ${EgressMode.options.join(', ')}`, 'mode');
  const mode = request.mode ?? (request.rules === undefined ? undefined : rules.length === 0 ? 'open' : 'allowlist');
  if (mode === undefined) return fail("an egress policy needs rules or a mode ('open', 'allowlist' or 'deny-all')", 'mode');
  if (mode === 'allowlist' && rules.length === 0) fail("egress mode 'allowlist' needs at least one rule; to deny all egress use mode 'deny-all'", 'rules');
  if (mode !== 'allowlist' && rules.length > 0) {
    fail(`egress mode '${mode}' takes no rules (give the rules alone, or mode 'allowlist', to allow only what they name)`, 'rules');
  }
  return { mode, rules };
}

function isRuleList(input: EgressPolicyInput): input is readonly string[] {
  return Array.isArray(input);
}

/** A policy's mode or rules that do not fit: `details.field` for older clients, one issue at `path`. */
function policyError(message: string, field: 'mode' | 'rules', path: string): RamifyError {
  return new RamifyError('VALIDATION_FAILED', message, { field, issues: [{ path, message }] });
}

/** `rulesPath`: where the rule list sits in the request (`body.rules`), null when it is not a request's. */
function parseRules(rules: readonly string[], origin: EgressPolicyOrigin, rulesPath: string | null): EgressRule[] {
  if (rules.length > MAX_EGRESS_RULES) {
    const why = `too many rules (${rules.length}); a policy holds at most ${MAX_EGRESS_RULES}`;
    throw ruleError(rules[MAX_EGRESS_RULES], MAX_EGRESS_RULES, why, {
      count: rules.length,
      max: MAX_EGRESS_RULES,
      ...(rulesPath === null ? {} : { issues: [{ path: rulesPath, message: `must be an array of at most ${MAX_EGRESS_RULES} rules, got ${rules.length}` }] }),
    });
  }
  const seen = new Set<string>();
  const parsed: EgressRule[] = [];
  rules.forEach((text, index) => {
    const rule = parseAt(text, index, origin, rulesPath);
    const canonical = formatEgressRule(rule);
    if (seen.has(canonical)) return;
    seen.add(canonical);
    parsed.push(rule);
  });
  return parsed;
}

/**
 * The first rule of `policy` that lets a sandbox resolve `name` (lowercase ASCII, no trailing dot): `*`, a
 * `host` rule naming it, or a `wildcard` rule it lies strictly below. Ports play no part (they restrict
 * connections, not names); address and network rules never allow a name. Null when no rule does.
 * The one definition of name matching, for the enforcement side.
 */
export function ruleForName(policy: EgressPolicy, name: string): EgressRule | null {
  for (const rule of policy.rules) {
    if (rule.kind === 'any') return rule;
    if (rule.kind === 'host' && rule.host === name) return rule;
    if (rule.kind === 'wildcard' && name.endsWith(`.${rule.suffix}`)) return rule;
  }
  return null;
}

/** The canonical spelling of a rule (what GET returns and the store keeps); parsing it gives the same rule. */
export function formatEgressRule(rule: EgressRule): string {
  switch (rule.kind) {
    case 'any':
      return '*';
    case 'host':
      return rule.host + formatPort(rule.port);
    case 'wildcard':
      return `*.${rule.suffix}${formatPort(rule.port)}`;
    case 'ip':
      return rule.address + formatPort(rule.port);
    case 'cidr':
      return `${rule.network}/${rule.prefix}${formatPort(rule.port)}`;
  }
}

/** The canonical spelling of every rule of a policy, in order. */
export function formatEgressPolicy(policy: EgressPolicy): string[] {
  return policy.rules.map(formatEgressRule);
}

/**
 * Validate and normalise `rules` into their canonical strings (parse + format).
 * @throws RamifyError `VALIDATION_FAILED` as {@link parseEgressPolicy}.
 */
export function normaliseEgressRules(rules: readonly string[]): string[] {
  return formatEgressPolicy(parseEgressPolicy(rules));
}

/** The canonical form of a parsed policy: `{ mode, rules }` with each rule's canonical spelling. */
export function canonicalEgressPolicy(policy: EgressPolicy): CanonicalEgressPolicy {
  return { mode: policy.mode, rules: formatEgressPolicy(policy) };
}

/**
 * Validate and normalise `input` (a rule list or `{ mode, rules }`) into its canonical form; `at`: where it
 * sits in the request (`body.egress` in a create), for the error's `details.issues`.
 * @throws RamifyError `VALIDATION_FAILED` as {@link parseEgressPolicy}.
 */
export function normaliseEgressPolicy(input: EgressPolicyInput, at = 'body'): CanonicalEgressPolicy {
  return canonicalEgressPolicy(parseEgressPolicy(input, 'request', at));
}

function formatPort(port: PortRange | null): string {
  if (port === null) return '';
  return port.from === port.to ? `:${port.from}` : `:${port.from}-${port.to}`;
}

/**
 * Parse `text`, the rule at `index` of a policy (null when parsed alone); `rulesPath`: where the policy's
 * rule list sits in the request (its errors' issue is at `<rulesPath>.<index>`), null when not a request's.
 */
function parseAt(text: unknown, index: number | null, origin: EgressPolicyOrigin, rulesPath: string | null): EgressRule {
  const at = (rulesPath === null || index === null) ? null : `${rulesPath}.${index}`;
  if (typeof text !== 'string') throw ruleError(String(text), index, 'a rule must be a string', {}, at);
  const fail: (why: string) => never = (why) => {
    throw ruleError(text, index, why, {}, at);
  };
  if (text.length > MAX_EGRESS_RULE_LENGTH) fail(`longer than ${MAX_EGRESS_RULE_LENGTH} characters`);
  const trimmed = text.trim();
  if (trimmed === '') fail('empty rule');
  if (trimmed.includes('://')) fail("a rule is a host, address or network, not a URL (write 'example.com:443', not 'https://example.com')");
  if (trimmed.startsWith('[') || (trimmed.match(/:/g)?.length ?? 0) > 1) fail(IPV6_REFUSED);
  // Whitespace, control characters and the separators of other grammars (lists, URLs) are never part of a rule.
  if (/[\s\p{Cc},;?#@[\]\\]/u.test(trimmed)) fail('contains a character that cannot appear in a host name, address or network');
  if (trimmed === '*') return { kind: 'any' };

  const colon = trimmed.lastIndexOf(':');
  const target = colon === -1 ? trimmed : trimmed.slice(0, colon);
  const port = colon === -1 ? null : parsePort(trimmed.slice(colon + 1), fail);
  if (target === '') fail('a host, address or network is missing before the port');
  if (target === '*') fail("'*' allows every destination and takes no port");

  if (target.includes('/')) return { kind: 'cidr', ...parseCidr(target, fail), port };
  if (target.startsWith('*.')) {
    const suffix = target.slice(2);
    if (suffix.includes('*')) fail(WILDCARD_PLACEMENT);
    if (NUMERIC_LAST_LABEL.test(stripTrailingDot(suffix))) fail('a wildcard covers names, not IP addresses (use a CIDR such as 10.0.0.0/8)');
    const host = normaliseHost(suffix, fail);
    if (getDomain(host, { allowPrivateDomains: false }) === null) fail(`a wildcard cannot cover a public suffix ('${host}' is one)`);
    return { kind: 'wildcard', suffix: host, port };
  }
  if (target.includes('*')) fail(WILDCARD_PLACEMENT);
  if (NUMERIC_LAST_LABEL.test(stripTrailingDot(target))) return { kind: 'ip', address: parseIpv4(target, fail), port };
  const host = normaliseHost(target, fail);
  if (origin === 'request' && !host.includes('.')) fail(singleLabelHint(host));
  return { kind: 'host', host, port };
}

/** Why a single-label host is refused, and what was probably meant. */
function singleLabelHint(host: string): string {
  return `'${host}' is a single label, not a host name (write the whole name, as in 'pypi.org'); ` +
    "to deny all egress use mode 'deny-all' (CLI --deny-all, SDK egress: { mode: 'deny-all' }), to allow all use mode 'open' or '*'";
}

const IPV6_REFUSED = 'IPv6 destinations cannot be allowed: sandboxes have no IPv6 egress (it is always dropped); use an IPv4 address or a host name';
const WILDCARD_PLACEMENT = "a wildcard is only allowed as the whole first label, as in '*.example.com'";

function parsePort(text: string, fail: (why: string) => never): PortRange {
  const m = /^(\d{1,10})(?:-(\d{1,10}))?$/.exec(text);
  if (!m) fail(text === '' ? "the port is missing after ':'" : `port '${text}' is not a number or a range N-M`);
  const from = Number(m[1]);
  const to = m[2] === undefined ? from : Number(m[2]);
  for (const port of [from, to]) if (port < 1 || port > 65535) fail(`port ${port} is outside 1-65535`);
  if (from > to) fail(`port range ${from}-${to} is reversed (write ${to}-${from})`);
  return { from, to };
}

function parseIpv4(text: string, fail: (why: string) => never): string {
  if (!IPV4.test(text)) fail(`'${text}' is not a valid IPv4 address (four numbers 0-255 separated by dots, no leading zeros)`);
  return text;
}

function parseCidr(text: string, fail: (why: string) => never): { network: string; prefix: number } {
  const [address, prefixText, ...rest] = text.split('/');
  if (rest.length > 0 || !NUMERIC_LAST_LABEL.test(address)) fail(`'${text}' is not a valid CIDR: '/' only appears in IPv4 networks such as 10.0.0.0/8`);
  parseIpv4(address, fail);
  if (!/^(?:0|[1-9]\d?)$/.test(prefixText) || Number(prefixText) > 32) fail(`prefix length '/${prefixText}' is not a number from 0 to 32`);
  const prefix = Number(prefixText);
  const value = ipv4ToInt(address);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const network = (value & mask) >>> 0;
  if (network !== value) fail(`'${text}' has host bits set: did you mean '${intToIpv4(network)}/${prefix}' (the network) or '${address}' (one address)?`);
  return { network: address, prefix };
}

function ipv4ToInt(address: string): number {
  return address.split('.').reduce((acc, octet) => acc * 256 + Number(octet), 0);
}

function intToIpv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => (value >>> shift) & 0xff).join('.');
}

function stripTrailingDot(name: string): string {
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** Lowercase ASCII (punycode for IDN), no trailing dot, RFC 1035 lengths, labels of letters, digits, `-` and `_`. */
function normaliseHost(name: string, fail: (why: string) => never): string {
  const bare = stripTrailingDot(name);
  if (bare === '') fail('the host name is empty');
  const ascii = domainToASCII(bare);
  if (ascii === '') fail(`'${name}' is not a valid host name`);
  if (ascii.length > MAX_HOST_LENGTH) fail(`the host name is longer than ${MAX_HOST_LENGTH} characters`);
  for (const label of ascii.split('.')) {
    if (label === '') fail(`'${name}' has an empty label (two dots in a row, or a leading dot)`);
    if (label.length > 63) fail(`the label '${label.slice(0, 16)}...' is longer than 63 characters`);
    if (!LABEL.test(label)) fail(`the label '${label}' is not valid (letters, digits, '-' and '_'; no '-' at either end)`);
  }
  return ascii;
}

/** Longest rule text quoted back in an error message. */
const QUOTED_RULE_LENGTH = 80;

/**
 * `egress rule 3 '<rule>': <why>` with details `rule`, `index` and `extra`; at `path` (`body.rules.2`), one
 * issue `{ path, message: why, rule }` (none when the rule is not a request's).
 */
function ruleError(text: unknown, index: number | null, why: string, extra: Record<string, unknown> = {}, path: string | null = null): RamifyError {
  const raw = String(text);
  const rule = raw.length > QUOTED_RULE_LENGTH ? `${raw.slice(0, QUOTED_RULE_LENGTH)}...` : raw;
  const where = index === null ? 'egress rule' : `egress rule ${index + 1}`;
  const issues = path === null ? {} : { issues: [{ path, message: why, rule }] };
  return new RamifyError('VALIDATION_FAILED', `${where} '${rule}': ${why}`, { rule, ...(index === null ? {} : { index }), ...issues, ...extra });
}
