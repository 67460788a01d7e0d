/**
 * The warm pool's configuration (docs/design/POOL.md): which templates keep sandboxes restored and idle
 * ahead of creates, how many, and within what memory. Parsed from `ramify serve --warm-pool` (here, so
 * that the CLI refuses a bad spec before it starts anything, and core reads the same shape).
 */
import { RuntimeName } from './api.js';
import { RamifyError } from './errors.js';

/** One fixed pool size: `count` idle sandboxes of template `template` (a name or id) on `runtime` (absent: the daemon's default runtime). */
export interface WarmPoolSize {
  template: string;
  runtime?: RuntimeName;
  count: number;
}

/**
 * - `off`: no pool, every create restores (the default of core and of `serve()`: tests count sandboxes);
 * - `auto`: one idle sandbox per template and runtime that a create used in the last {@link AUTO_WINDOW_MS}
 *   (the default of `ramify serve`), most recently used first, within the memory budget;
 * - `sizes`: the given counts, within the memory budget.
 */
export type WarmPoolConfig = { mode: 'off' } | { mode: 'auto' } | { mode: 'sizes'; sizes: WarmPoolSize[] };

/** `auto` pools the templates creates used within this window, ms (one hour). */
export const AUTO_WINDOW_MS = 3_600_000;

/** Most sandboxes one `--warm-pool` entry may ask for. */
export const MAX_POOL_COUNT = 16;

/**
 * Parse `--warm-pool`: `auto`, `off` (or `0`), or a list `base=2,python-tests=1,base:microvm=1`
 * (template name, optional `:runtime`, `=` count 0-16).
 * @throws RamifyError `VALIDATION_FAILED` (field `warmPool`) naming the bad entry.
 */
export function parseWarmPoolSpec(spec: string): WarmPoolConfig {
  const text = spec.trim();
  if (text === 'auto') return { mode: 'auto' };
  if (text === 'off' || text === '0' || text === '') return { mode: 'off' };
  const sizes: WarmPoolSize[] = [];
  for (const entry of text.split(',').map((e) => e.trim())) {
    const match = /^([A-Za-z0-9_][A-Za-z0-9_.-]*)(?::([a-z]+))?=(\d+)$/.exec(entry);
    const count = match ? Number(match[3]) : NaN;
    if (!match || !(count <= MAX_POOL_COUNT)) {
      throw new RamifyError('VALIDATION_FAILED', `--warm-pool: '${entry}' is not <template>[:<runtime>]=<count 0-${MAX_POOL_COUNT}> (or 'auto', 'off')`, { field: 'warmPool' });
    }
    const runtime = match[2] === undefined ? undefined : RuntimeName.safeParse(match[2]);
    if (runtime && !runtime.success) {
      throw new RamifyError('VALIDATION_FAILED', `--warm-pool: unknown runtime '${match[2]}' in '${entry}' (one of ${RuntimeName.options.join(', ')})`, { field: 'warmPool' });
    }
    sizes.push({ template: match[1]!, ...(runtime ? { runtime: runtime.data } : {}), count });
  }
  return { mode: 'sizes', sizes };
}

/** The default memory budget of the pool, MiB: the `memoryMB` of the idle sandboxes it holds, at most 1/16 of the host's memory, between 512 and 4096. */
export function defaultWarmPoolBudgetMB(totalMemoryBytes: number): number {
  return Math.min(4096, Math.max(512, Math.floor(totalMemoryBytes / 16 / (1024 * 1024))));
}
