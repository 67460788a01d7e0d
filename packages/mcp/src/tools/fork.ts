/**
 * The signature move: fork a sandbox into copies with the same memory, processes and files, and
 * explore: one fork per strategy (a shell command), all run at once, each scored by a score command
 * or an expected-output check, the winner kept and the others killed (the SDK's `explore`).
 */
import { z } from 'zod';
import { Budget, MAX_FORK_COUNT } from '@ramify/contracts';
import { explore, ExploreFailedError, RamifyError, type CommandResult, type ExploreReport, type ExploreStoppedReport, type ForkTreeNode, type Sandbox, type Strategy } from '@ramify/sdk';
import { cutForModel } from '../cut.js';
import { jsonSafe } from '../results.js';
import { confirm, sandboxId } from './args.js';
import { DEFAULT_COMMAND_TIMEOUT_MS } from './commands.js';
import { defineTool, invalidArgument, type Tool, type ToolOutput } from './tool.js';

/** Most strategies one `sandbox_explore` runs (each is a running sandbox while it runs). */
export const MAX_STRATEGIES = 16;
/** Bytes of the winner's stdout shown. */
const WINNER_OUTPUT_BYTES = 4096;

/** The answer to a fork or explore without `confirm: true`: nothing started, what it would cost (a dry run, not an error). */
function costOnly(what: string, sandboxId: string, count: number, memoryMB: number): ToolOutput {
  return {
    text: `${what} would start ${count} new sandbox${count === 1 ? '' : 'es'} of ${memoryMB} MB each (${count * memoryMB} MB in all); nothing was started: call again with confirm: true`,
    data: { sandboxId, confirmed: false, wouldStart: count, memoryMBEach: memoryMB, memoryMBTotal: count * memoryMB },
  };
}

const sandboxFork = defineTool({
  name: 'sandbox_fork',
  title: 'Fork a sandbox',
  description: `Copy a sandbox into count new running sandboxes (max ${MAX_FORK_COUNT}) with the same memory, processes and files; each costs a sandbox, without confirm: true it only says what it would cost.`,
  input: z.strictObject({
    sandboxId,
    count: z.number().int().min(1).max(MAX_FORK_COUNT).describe(`how many copies (1-${MAX_FORK_COUNT})`),
    confirm,
  }),
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(args, ctx) {
    const source = ctx.sandbox(args.sandboxId);
    if (!args.confirm) return costOnly('sandbox_fork', args.sandboxId, args.count, (await source.getInfo()).memoryMB);
    const forks = await source.fork({ count: args.count });
    const ids = forks.map((f) => f.sandboxId);
    return { text: `forked ${args.sandboxId} into ${ids.length}: ${ids.join(', ')}`, data: { sandboxId: args.sandboxId, forks: ids } };
  },
});

/** The last number in `text` (a score command's stdout), or undefined. */
export function lastNumber(text: string): number | undefined {
  const all = text.match(/-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?/g);
  return all ? Number(all[all.length - 1]) : undefined;
}

const tree = (node: ForkTreeNode): string =>
  [`${node.sandboxId} (source)`, ...node.children.map((c, i) => {
    const branch = i === node.children.length - 1 ? '└─' : '├─';
    const how = c.outcome === 'paused' ? 'stopped by the budget' : c.error ? `failed: ${c.error}` : `score ${c.score}`;
    return `${branch} ${c.sandboxId}  ${c.strategy}  ${how}  → ${c.outcome}`;
  })].join('\n');

const sandboxExplore = defineTool({
  name: 'sandbox_explore',
  title: 'Explore strategies in forks',
  description: 'Try several shell-command strategies at once, each in its own fork of a sandbox; score each (scoreCommand or expectedOutput), keep the best fork, kill the rest.',
  input: z.strictObject({
    sandboxId,
    strategies: z.array(z.strictObject({
      name: z.string().min(1).max(64).optional().describe('label in the report; default s1, s2, ...'),
      command: z.string().min(1).max(1 << 20).describe('shell command line of this strategy (bash -c); a non-zero exit fails it'),
    })).min(1).max(MAX_STRATEGIES).describe(`1-${MAX_STRATEGIES} strategies, each run in its own fork`),
    scoreCommand: z.string().min(1).max(1 << 20).optional().describe("run in each fork after its strategy; the last number it prints is the score (higher wins); a non-zero exit fails the strategy"),
    expectedOutput: z.string().min(1).optional().describe("instead of scoreCommand: a strategy passes (score 1) when its stdout contains this text, else it fails"),
    timeoutMs: z.number().int().min(1).max(3_600_000).default(DEFAULT_COMMAND_TIMEOUT_MS).describe(`deadline of each strategy's command and of the score command, ms (default ${DEFAULT_COMMAND_TIMEOUT_MS})`),
    keep: z.enum(['winner', 'all', 'none']).default('winner').describe('which forks stay alive afterwards: winner (default), all, or none; the source is never touched'),
    budget: Budget.optional().describe('cap the exploration: { cpuSeconds?, sandboxSeconds?, maxSandboxes? } for the source and its forks from now; over it the forks are paused (never killed), the unfinished strategies are reported stopped, and the best finished one (if any) wins'),
    confirm,
  }),
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  async run(args, ctx) {
    const { scoreCommand, expectedOutput, timeoutMs } = args;
    if ((scoreCommand === undefined) === (expectedOutput === undefined)) {
      throw invalidArgument(scoreCommand === undefined ? 'scoreCommand' : 'expectedOutput', 'give exactly one of scoreCommand (prints a number) and expectedOutput (text stdout must contain)');
    }
    const source = ctx.sandbox(args.sandboxId);
    if (!args.confirm) return costOnly('sandbox_explore', args.sandboxId, args.strategies.length, (await source.getInfo()).memoryMB);
    const strategies: Strategy<CommandResult>[] = args.strategies.map((s, i) => ({
      name: s.name ?? `s${i + 1}`,
      run: (sbx: Sandbox) => sbx.commands.run(s.command, { timeoutMs }),
    }));
    const score = async (result: CommandResult, sbx: Sandbox): Promise<number> => {
      if (expectedOutput !== undefined) {
        if (!result.stdout.includes(expectedOutput)) throw new Error(`stdout does not contain the expected output ${JSON.stringify(expectedOutput)}`);
        return 1;
      }
      const r = await sbx.commands.run(scoreCommand as string, { timeoutMs });
      const n = lastNumber(r.stdout);
      if (n === undefined) throw new Error(`scoreCommand printed no number: ${JSON.stringify(r.stdout.slice(-200))}`);
      return n;
    };
    let report: ExploreReport<CommandResult> | ExploreStoppedReport<CommandResult>;
    try {
      report = await explore(source, strategies, { score, keep: args.keep, ...(args.budget ? { budget: args.budget } : {}) });
    } catch (err) {
      if (err instanceof ExploreFailedError) throw new RamifyError('EXPLORE_FAILED', err.message, { entries: jsonSafe(err.entries) });
      throw err;
    }
    const w = report.winner;
    const winnerStdout = w ? cutForModel(w.result.stdout, WINNER_OUTPUT_BYTES, `the whole of it: command_output on the winner (sandboxId ${w.sandbox.sandboxId}, pid ${w.result.pid})`).text : null;
    const stop = report.stoppedBy === 'budget'
      ? `stopped by the budget (${report.budget.exceeded} ${report.budget.exceeded === 'sandboxSeconds' ? report.budget.used.sandboxSeconds : report.budget.used.cpuSeconds} of ${report.budget.limits[report.budget.exceeded ?? 'cpuSeconds']}): the unfinished strategies' forks are paused; raise the budget and resume them to go on`
      : null;
    const text = [
      ...(stop ? [stop] : []),
      w ? `winner: ${w.strategy} in ${w.sandbox.sandboxId} (score ${w.score}, ${Math.round(w.durationMs)} ms)${args.keep === 'none' ? ', killed (keep none)' : stop ? ', left as the budget left it (paused with the tree)' : ', left running'}` : 'no strategy finished with a score',
      tree(report.forkTree),
      ...(w ? [`--- winner's stdout ---`, winnerStdout as string] : []),
    ].join('\n');
    return {
      text,
      data: jsonSafe({
        sandboxId: args.sandboxId,
        stoppedBy: report.stoppedBy,
        ...(report.stoppedBy === 'budget' ? { budget: report.budget } : {}),
        winner: w ? { sandboxId: w.sandbox.sandboxId, strategy: w.strategy, score: w.score, durationMs: w.durationMs, exitCode: w.result.exitCode, stdout: winnerStdout } : null,
        entries: report.entries,
        forkTree: report.forkTree,
      }),
    };
  },
});

/** The fork tools. */
export const forkTools: Tool[] = [sandboxFork, sandboxExplore];
