/**
 * The protocol fixture's budgets (see `contract-server.ts`): `PATCH`/`GET /v1/sandboxes/{id}/budget` with the
 * daemon's shapes. Nothing is metered: a test makes a tree run out with {@link FixtureBudgets.exceed}, which
 * does what the daemon does then (marks the budget, pauses every running sandbox of the tree).
 */
import type { Budget, BudgetInfo, BudgetLimit } from '@ramify/contracts';
import type { FixtureReply } from './contract-server.js';
import type { FixtureSandbox } from './fixture-state.js';

const ok = (json: unknown): FixtureReply => ({ status: 200, json });

export class FixtureBudgets {
  readonly #sandboxes: Map<string, FixtureSandbox>;
  readonly #budgets = new Map<string, BudgetInfo>();

  constructor(sandboxes: Map<string, FixtureSandbox>) {
    this.#sandboxes = sandboxes;
  }

  /** Set or change the budget on `sandboxId` (limits given change, the others stay). */
  set(sandboxId: string, patch: Budget): BudgetInfo {
    const old = this.#budgets.get(sandboxId);
    const limits = { cpuSeconds: null, sandboxSeconds: null, maxSandboxes: null, ...old?.limits, ...patch };
    const info: BudgetInfo = { sandboxId, limits, used: old?.used ?? { cpuSeconds: 0, sandboxSeconds: 0, sandboxes: 1 }, exceeded: null, since: old?.since ?? new Date().toISOString() };
    this.#budgets.set(sandboxId, info);
    return info;
  }

  /** The budgets covering `sandboxId`: its own, then its ancestors'. */
  covering(sandboxId: string): BudgetInfo[] {
    const out: BudgetInfo[] = [];
    for (let id: string | null = sandboxId; id !== null; id = this.#sandboxes.get(id)?.info.parentId ?? null) {
      const budget = this.#budgets.get(id);
      if (budget) out.push(budget);
    }
    return out;
  }

  /** Make the budget on `rootId` run out at `used` of `limit`, as the daemon finds it: marked, and its tree's running sandboxes paused. */
  exceed(rootId: string, limit: Exclude<BudgetLimit, 'maxSandboxes'> = 'cpuSeconds', used = (this.#budgets.get(rootId)?.limits[limit] ?? 0) + 0.5): void {
    const budget = this.#budgets.get(rootId);
    if (!budget) throw new Error(`fixture: no budget on ${rootId}`);
    budget.used = { ...budget.used, [limit]: used };
    budget.exceeded = limit;
    for (const s of this.#sandboxes.values()) {
      if (s.info.state === 'running' && this.covering(s.info.id).includes(budget)) s.info.state = 'paused';
    }
  }

  /** The routes, as `[method, path after /v1/sandboxes/<id>, handler]`. */
  routes(): Array<{ method: string; rest: string; handler: (s: FixtureSandbox, body: () => Promise<Budget>) => Promise<FixtureReply> }> {
    return [
      { method: 'GET', rest: '/budget', handler: async (s) => ok({ budgets: this.covering(s.info.id) }) },
      { method: 'PATCH', rest: '/budget', handler: async (s, body) => ok(this.set(s.info.id, await body())) },
    ];
  }
}
