/**
 * Use-case: the fork tree a sandbox is in (`GET /v1/sandboxes/{id}/tree`): from its root (the ancestor that
 * was created, not forked), every sandbox forked from it, recursively, each with its state, its usage
 * totals and the budget set on it.
 */
import type { SandboxTreeNode, SandboxTreeResponse } from '@ramify/contracts';
import type { Core } from '../context.js';
import { loadSandbox } from '../lifecycle/records.js';
import { budgetStatus, toBudgetInfo } from './budgets.js';
import { noAmounts, sandboxTotals, toFigures } from './totals.js';

/**
 * The whole tree of `sandboxId`, killed members included (their usage stays).
 * @throws RamifyError `SANDBOX_NOT_FOUND`.
 */
export async function getSandboxTree(core: Core, sandboxId: string): Promise<SandboxTreeResponse> {
  await loadSandbox(core, sandboxId);
  const rootId = (await core.store.treeRoots([sandboxId])).get(sandboxId) ?? sandboxId;
  const members = await core.store.subtree(rootId);
  const totals = await sandboxTotals(core, members);
  const budgets = new Map<string, SandboxTreeNode['budget']>();
  for (const b of await core.store.budgetsCovering(members.map((m) => m.id))) budgets.set(b.sandboxId, toBudgetInfo(await budgetStatus(core, b)));
  const nodes = new Map<string, SandboxTreeNode>();
  for (const m of members) {
    nodes.set(m.id, {
      sandboxId: m.id, parentId: m.parentId, state: m.state, templateId: m.templateId, createdAt: new Date(m.createdAt).toISOString(),
      usage: toFigures(totals.get(m.id) ?? noAmounts()), budget: budgets.get(m.id) ?? null, children: [],
    });
  }
  // Members come parents first: each child finds its parent's node already there.
  for (const m of members) if (m.parentId !== null && m.id !== rootId) nodes.get(m.parentId)?.children.push(nodes.get(m.id) as SandboxTreeNode);
  return { rootId, size: members.length, root: nodes.get(rootId) as SandboxTreeNode };
}
