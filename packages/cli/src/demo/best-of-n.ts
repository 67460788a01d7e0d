/**
 * `ramify demo best-of-n`: Ramify's signature move on real input.
 *
 * 1. create a sandbox from the `python-tests` template (CPython's stdlib + its own test suite);
 * 2. reach an expensive state: introduce a break in `textwrap`, run the real tests once (they fail),
 *    start a warm interpreter that keeps the test modules imported;
 * 3. pause, then `Sandbox.explore`: fork into N, each fork applies a different candidate fix and runs
 *    the project's real tests; keep the fork whose tests pass (ties: fastest), kill the others;
 * 4. print a table (fork, strategy, tests passed/failed, seconds) and the fork tree.
 */
import { RamifyError, Sandbox, explore, getHealth, type ConnectionOpts, type ExploreReport, type ForkTreeNode } from '@ramify/sdk';
import type { RuntimeName } from '@ramify/contracts';
import { CANDIDATE_FIXES, TEST_COMMAND, breakScript, fixScript, parseUnittest, type TestCounts } from './textwrap-scenario.js';

/** Options the `demo best-of-n` command passes in. */
export interface BestOfNOptions {
  /** Where the API is (from `--api-url` / `--api-key` or the environment). */
  connection: ConnectionOpts;
  /** `--json`: print a machine-readable report instead of tables. */
  json: boolean;
  /** `--template`: template to start from (default `python-tests`). */
  template?: string;
  /** `-n, --count`: how many strategies/forks (default 3, at most the number of candidate fixes). */
  count?: number;
  /** `--runtime`: runtime of the sandboxes (default: the daemon's default runtime). */
  runtime?: RuntimeName;
  /** Writes human output (stdout). */
  print: (line: string) => void;
}

export const DEMO_TEMPLATE = 'python-tests';
/** Width of the strategy column of the fork tree. */
const STRATEGY_WIDTH = Math.max(...CANDIDATE_FIXES.map((f) => f.name.length));
const DEFAULT_COUNT = 3;

interface ForkResult extends TestCounts {
  seconds: number;
}

/** Run the demo; rejects with a `RamifyError` (the CLI prints `CODE: message`). */
export async function runBestOfN(opts: BestOfNOptions): Promise<void> {
  const count = opts.count ?? DEFAULT_COUNT;
  if (count > CANDIDATE_FIXES.length) {
    throw new RamifyError('VALIDATION_FAILED', `the demo has ${CANDIDATE_FIXES.length} candidate fixes; --count must be 1-${CANDIDATE_FIXES.length}`);
  }
  const template = opts.template ?? DEMO_TEMPLATE;
  const say = (line: string): void => {
    if (!opts.json) opts.print(line);
  };
  const t0 = Date.now();
  const step = async <T>(label: string, fn: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    const value = await fn();
    say(`  ${label.padEnd(58)} ${((Date.now() - started) / 1000).toFixed(2)} s`);
    return value;
  };

  say(`best-of-${count}: CPython's textwrap, broken on purpose; ${count} forks try ${count} candidate fixes against the real test suite`);
  const on = opts.runtime ? ` on ${opts.runtime}` : '';
  const poolBefore = await poolHits(opts.connection);
  const source = await step(`create a sandbox from template '${template}'${on}`, () =>
    Sandbox.create({ ...opts.connection, template, timeoutMs: 900_000, ...(opts.runtime ? { runtime: opts.runtime } : {}) }).catch((err: unknown) => {
      if ((err as { code?: string }).code === 'TEMPLATE_NOT_FOUND') {
        throw new RamifyError('TEMPLATE_NOT_FOUND', `template '${template}' is not built: run 'ramify template build examples/templates/python-tests.yaml' (bash scripts/setup.sh does it)`);
      }
      if ((err as { code?: string }).code === 'TEMPLATE_NOT_BUILT') {
        throw new RamifyError('TEMPLATE_NOT_BUILT', `template '${template}' has no ${opts.runtime} image: run 'ramify template build examples/templates/python-tests.yaml --runtime ${opts.runtime}' (base first if it lacks one too: 'ramify template build base --runtime ${opts.runtime}')`);
      }
      throw err;
    }));
  const poolAfter = await poolHits(opts.connection);
  if (poolBefore !== null && poolAfter !== null) {
    say(poolAfter > poolBefore
      ? '    -> claimed from the warm pool (restored ahead of time)'
      : "    -> restored: the warm pool had none idle (it keeps one per template used in the last hour: run the demo again)");
  }
  try {
    await step('introduce the break in textwrap.dedent', async () => {
      await source.files.write('/tmp/ramify-demo/break.py', breakScript());
      await source.commands.run('python3 /tmp/ramify-demo/break.py');
    });
    const baseline = await step('run the real tests once (test.test_textwrap)', async () => parseUnittest(await runTests(source)));
    say(`    -> ${baseline.passed}/${baseline.ran} passed, ${baseline.failed} failing`);
    const warm = await step('start a warm interpreter holding the test modules', () =>
      source.commands.run(`python3 -c 'import test.test_textwrap, textwrap, time; print("warm", flush=True); time.sleep(86400)'`, { background: true }));
    await step('pause (memory, processes and files checkpointed)', () => source.pause());

    const byName = new Map<string, ForkResult>();
    const strategies = CANDIDATE_FIXES.slice(0, count).map((fix) => ({
      name: fix.name,
      run: async (fork: Sandbox): Promise<ForkResult> => {
        const started = Date.now();
        await fork.files.write('/tmp/ramify-demo/fix.py', fixScript(fix));
        await fork.commands.run('python3 /tmp/ramify-demo/fix.py');
        const result = { ...parseUnittest(await runTests(fork)), seconds: (Date.now() - started) / 1000 };
        byName.set(fix.name, result);
        return result;
      },
    }));
    const report = await step(`fork x${count}, each tries its fix and runs the tests`, () =>
      explore(source, strategies, { score: (r: ForkResult) => (r.ran > 0 && r.failed === 0 ? 1 : 0) }));
    const resultOf = (name: string): ForkResult | undefined => byName.get(name);
    const winnerProcs = await report.winner.sandbox.commands.list();
    const warmAlive = winnerProcs.some((p) => p.pid === warm.pid && p.running);
    await warm.disconnect();

    if (opts.json) {
      opts.print(JSON.stringify(jsonReport(report, resultOf, source.sandboxId, baseline, warmAlive, Date.now() - t0), null, 2));
    } else {
      say('');
      say(renderTable(report, resultOf));
      say('');
      say('fork tree:');
      for (const line of renderTree(report.forkTree, resultOf)) say(`  ${line}`);
      say('');
      say(`kept ${report.winner.sandbox.sandboxId} (${report.winner.strategy}); its warm interpreter (pid ${warm.pid}) is ${warmAlive ? 'still running' : 'gone'}.`);
      say(`try: ramify sandbox exec ${report.winner.sandbox.sandboxId} -- ${TEST_COMMAND.replace(' 2>&1', '')}`);
      say(`the winner keeps running for 15 minutes, then pauses itself; discard it with: ramify sandbox kill ${report.winner.sandbox.sandboxId}`);
      say(`total ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
  } finally {
    // The source's broken state was only the starting point: discard it (the winner carries on).
    await source.kill().catch(() => undefined);
  }
}

async function runTests(sbx: Sandbox): Promise<string> {
  const r = await sbx.commands.run(TEST_COMMAND, { timeoutMs: 300_000 }).catch((err: unknown) => {
    // A failing test run exits non-zero: that is a result, not an error.
    const result = (err as { result?: { stdout: string } }).result;
    if (result) return result;
    throw err;
  });
  return r.stdout;
}

type ResultOf = (strategy: string) => ForkResult | undefined;

function renderTable(report: ExploreReport<ForkResult>, resultOf: ResultOf): string {
  const head = ['FORK', 'STRATEGY', 'PASSED', 'FAILED', 'SECONDS', 'OUTCOME'];
  const lines = report.entries.map((e) => {
    const res = resultOf(e.name);
    return [e.sandboxId, e.name, res ? `${res.passed}/${res.ran}` : '-', res ? String(res.failed) : (e.error?.message ?? '-'), (e.durationMs / 1000).toFixed(2), e.outcome === 'winner' ? 'kept (winner)' : e.outcome];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  return [head, ...lines].map((l) => l.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

function renderTree(node: ForkTreeNode, resultOf: ResultOf, prefix = '', last = true, root = true): string[] {
  const label = node.strategy === null
    ? `${node.sandboxId}  (source: broken textwrap; paused for the fork, then discarded)`
    : `${node.sandboxId}  ${node.strategy.padEnd(STRATEGY_WIDTH)}  ${node.error === null ? describe(resultOf(node.strategy)) : `failed: ${node.error}`}  ${node.outcome === 'winner' ? 'kept' : node.outcome}`;
  const lines = [root ? label : `${prefix}${last ? '└─ ' : '├─ '}${label}`];
  node.children.forEach((child, i) => {
    lines.push(...renderTree(child, resultOf, root ? '' : `${prefix}${last ? '   ' : '│  '}`, i === node.children.length - 1, false));
  });
  return lines;
}

const describe = (r: ForkResult | undefined): string => (r ? `${r.passed}/${r.ran} passed` : 'see table');

function jsonReport(report: ExploreReport<ForkResult>, resultOf: ResultOf, sourceId: string, baseline: TestCounts, warmAlive: boolean, elapsedMs: number): unknown {
  return {
    source: sourceId,
    baseline,
    winner: { sandboxId: report.winner.sandbox.sandboxId, strategy: report.winner.strategy, result: report.winner.result, durationMs: report.winner.durationMs },
    entries: report.entries.map((e) => ({ ...e, result: resultOf(e.name) ?? null })),
    forkTree: report.forkTree,
    warmProcessSurvivedFork: warmAlive,
    elapsedMs,
  };
}

/** The daemon's warm pool hits so far (`GET /v1/health`), null when it cannot be read. */
async function poolHits(connection: BestOfNOptions['connection']): Promise<number | null> {
  return getHealth(connection).then((h) => h.pool?.hits ?? null, () => null);
}
