/**
 * The budget side of {@link explore}: watch the source's own budget (set by explore) while the strategies
 * run, so explore stops waiting once the daemon has found the tree over it and paused it.
 */
import type { BudgetInfo } from '@ramify/contracts';
import type { Sandbox } from './sandbox.js';

/** A watch on the source's own budget; see {@link watchBudget}. */
export interface BudgetWatch {
  /** Resolves with the source's budget once it is found exceeded (by the poll or by {@link checkNow}); never after {@link stop}. */
  readonly exceeded: Promise<BudgetInfo>;
  /** The exceeded budget once found, else null. */
  readonly found: BudgetInfo | null;
  /**
   * Look now (a strategy failed: was it because the daemon paused its fork?): the exceeded budget, or null
   * when it is not exceeded or cannot be read. Never rejects.
   */
  checkNow(): Promise<BudgetInfo | null>;
  stop(): void;
}

/** Poll `source`'s own budget every `pollMs` (one `GET .../budget` each) until it is exceeded or the watch stops. */
export function watchBudget(source: Sandbox, pollMs: number): BudgetWatch {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let found: BudgetInfo | null = null;
  let resolve!: (info: BudgetInfo) => void;
  const exceeded = new Promise<BudgetInfo>((r) => (resolve = r));
  const checkNow = async (): Promise<BudgetInfo | null> => {
    if (found) return found;
    const own = (await source.getBudgets().catch(() => [])).find((b) => b.sandboxId === source.sandboxId);
    if (!own?.exceeded || stopped) return null;
    found = own;
    resolve(own);
    return own;
  };
  const look = async (): Promise<void> => {
    if (stopped || (await checkNow())) return;
    if (!stopped) timer = setTimeout(() => void look(), pollMs);
  };
  timer = setTimeout(() => void look(), pollMs);
  return {
    exceeded,
    get found() { return found; },
    checkNow,
    stop: () => { stopped = true; clearTimeout(timer); },
  };
}

/** The failure recorded for a strategy the budget stopped. */
export function stoppedByBudget(info: BudgetInfo): { code: 'BUDGET_EXCEEDED'; message: string } {
  const limit = info.exceeded ?? 'cpuSeconds';
  const used = limit === 'cpuSeconds' ? info.used.cpuSeconds : info.used.sandboxSeconds;
  return { code: 'BUDGET_EXCEEDED', message: `the exploration's budget ran out (${limit} ${used} of ${info.limits[limit]}) before this strategy ended: its fork was paused` };
}
