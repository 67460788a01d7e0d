/**
 * Names of private networks and of sandboxes on them: both are DNS labels (`<alias>.<network>.internal`).
 * The default alias of a sandbox, and the aliases a fork's children get from their parent's.
 */
import { DNS_LABEL_PATTERN, DNS_LABEL_RULE, invalidField, quote } from '@ramify/contracts';

/**
 * `value` if it is a DNS label (lower case, 1-63 characters). `field` names it in the request body
 * (`name`, `alias`, `networks[0].alias`).
 * @throws RamifyError `VALIDATION_FAILED` naming the rule, as a schema issue on `body.<field>`
 *   (contracts/src/issue-messages.ts; details `field`, `value` kept for older clients).
 */
export function checkLabel(value: string, field: string): string {
  if (DNS_LABEL_PATTERN.test(value)) return value;
  throw invalidField(`body.${field.replace(/\[(\d+)\]/g, '.$1')}`, `must be ${DNS_LABEL_RULE}, got ${quote(value)}`, { field, value });
}

/** A sandbox's alias when none is given: `sbx-` and the last 8 characters of its id, lower case (`sbx-9a0b1c2d`). */
export function defaultAlias(sandboxId: string): string {
  return `sbx-${sandboxId.slice(-8).toLowerCase().replace(/[^a-z0-9]/g, '0')}`;
}

/**
 * The aliases of `count` fork children of a member called `parentAlias`: `<parentAlias>-<n>` for the lowest
 * n from 1 that `taken` does not hold, in order (the parent's alias shortened so that each fits 63 characters).
 */
export function forkAliases(parentAlias: string, count: number, taken: ReadonlySet<string>): string[] {
  const out: string[] = [];
  const used = new Set(taken);
  for (let n = 1; out.length < count; n++) {
    const suffix = `-${n}`;
    const alias = `${parentAlias.slice(0, 63 - suffix.length).replace(/-+$/, '')}${suffix}`;
    if (used.has(alias)) continue;
    used.add(alias);
    out.push(alias);
  }
  return out;
}
