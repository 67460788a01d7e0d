/** Plain aligned text tables for human output (no borders, two spaces between columns). */

/** Render `rows` under `headers`, each column padded to its widest cell (the last column is not padded). */
export function renderTable(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [line(headers), ...rows.map(line)].join('\n');
}

/** Render `key: value` lines with aligned values. */
export function renderFields(fields: [string, string][]): string {
  const width = Math.max(...fields.map(([k]) => k.length));
  return fields.map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${v}`).join('\n');
}
