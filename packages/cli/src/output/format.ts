/** Human formatting of sizes, times and durations. */

/** `1536` → `1.5 KiB`. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u += 1; }
  return u === 0 ? `${v} B` : `${v.toFixed(v >= 10 ? 0 : 1)} ${units[u]}`;
}

/** Milliseconds → `850ms`, `12.3s`, `4m05s`, `2h03m`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** ISO time → `3m ago` / `in 5m` relative to `now`; `-` for null. */
export function formatRelative(iso: string | null, now = Date.now()): string {
  if (!iso) return '-';
  const delta = Date.parse(iso) - now;
  if (Number.isNaN(delta)) return iso;
  const text = formatDuration(Math.abs(delta)).replace(/\.\ds$/, 's');
  return delta >= 0 ? `in ${text}` : `${text} ago`;
}
