/**
 * How a message repeats a string a client sent (a value, a key, a name it asked for): quoted and cut, so a
 * long or hostile string cannot make the message long or break its line. Used by the validation messages
 * (issue-messages.ts) and the not-found errors (errors.ts `notFound`); no dependencies, so the light entry
 * `@ramify/contracts/client` carries it. Mechanism: docs/design/ARCHITECTURE.md, "Validation messages".
 */

/** Longest received string (or key, or path segment) a message repeats, characters; longer ones end in `...`. */
export const MAX_QUOTED_CHARS = 40;

/** `s` cut to {@link MAX_QUOTED_CHARS} characters (code points), `...` marking a cut. */
export function truncate(s: string): string {
  const chars = Array.from(s);
  return chars.length > MAX_QUOTED_CHARS ? `${chars.slice(0, MAX_QUOTED_CHARS).join('')}...` : s;
}

/** `s` as a message quotes it: single quotes, control characters escaped, cut (see {@link truncate}). */
export function quote(s: string): string {
  return `'${JSON.stringify(truncate(s)).slice(1, -1).replace(/\\"/g, '"')}'`;
}
