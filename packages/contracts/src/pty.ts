/**
 * Terminal sizes: the bounds and default every side applies (the agent, core, the SDK), and the one
 * check that turns a bad size into a typed `PTY_SIZE_INVALID`.
 */
import { RamifyError } from './errors.js';

/** A terminal's size in character cells, each of 1..{@link MAX_PTY_CELLS}. */
export interface PtySize {
  cols: number;
  rows: number;
}

/** Largest number of columns or rows a terminal may have (a real screen has a few hundred at most). */
export const MAX_PTY_CELLS = 1000;

/** Size of a terminal created without one, a VT100's: 80 columns, 24 rows (never 0x0). */
export const DEFAULT_PTY_SIZE: Readonly<PtySize> = Object.freeze({ cols: 80, rows: 24 });

/**
 * `size` when both sides are whole numbers in 1..{@link MAX_PTY_CELLS}.
 * @throws RamifyError PTY_SIZE_INVALID (details `cols`, `rows`, `max`) otherwise.
 */
export function checkPtySize(size: { cols: unknown; rows: unknown }): PtySize {
  const ok = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= MAX_PTY_CELLS;
  if (ok(size.cols) && ok(size.rows)) return { cols: size.cols, rows: size.rows };
  throw new RamifyError('PTY_SIZE_INVALID', `a terminal size is 1..${MAX_PTY_CELLS} columns and rows, got ${String(size.cols)}x${String(size.rows)}`, {
    cols: size.cols,
    rows: size.rows,
    max: MAX_PTY_CELLS,
  });
}
