/** Metering, live metrics and budgets per fork tree (docs/design/USAGE.md). */
export { UsageMeter } from './meter.js';
export { UsageSampler } from './sampler.js';
export { MetricsWindow, type MetricSample } from './metrics-window.js';
export { meterClassOf, splitHours, hourOf, hourCeil, timeAmounts, spreadDeltas, cpuDelta, linkDelta, HOUR_MS, type MeterClass, type HourAmounts, type TimeRates, type CounterDeltas } from './accrual.js';
export { getUsage, parseQueryTime, DEFAULT_USAGE_WINDOW_MS } from './report.js';
export { getSandboxMetrics } from './metrics.js';
export { getSandboxTree } from './tree.js';
export { setBudget, removeBudget, getBudgets, budgetStatus, toBudgetInfo, newSandboxBudget, type BudgetStatus } from './budgets.js';
export { withinBudget, assertSnapshotWithinBudget, enforceBudgets, checkBudgetsNow } from './budget-guard.js';
export { sandboxTotals, toFigures } from './totals.js';
