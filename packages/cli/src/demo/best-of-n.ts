/**
 * `ramify demo best-of-n`: the showcase of fork + explore (owned by the lead).
 *
 * TODO(lead): implement. Intended shape: create (or connect to) a sandbox, prepare the task in it,
 * pause/fork it N ways with `Sandbox.explore(source, strategies, { score })` from `@ramify/sdk`, print
 * the report (table, or JSON with `opts.json`) and keep the winner. Throw `RamifyError`s on failure;
 * the CLI prints `CODE: message` and exits 1.
 */
import { RamifyError, type ConnectionOpts } from '@ramify/sdk';

/** Options the `demo best-of-n` command passes in. */
export interface BestOfNOptions {
  /** Where the API is (from `--api-url` / `--api-key` or the environment). */
  connection: ConnectionOpts;
  /** `--json`: print a machine-readable report instead of tables. */
  json: boolean;
  /** `--template`: template to start from (default `base`). */
  template?: string;
  /** `-n, --count`: how many strategies/forks (default decided by the demo). */
  count?: number;
  /** Writes human output (stdout). */
  print: (line: string) => void;
}

/** Run the demo. */
export async function runBestOfN(opts: BestOfNOptions): Promise<void> {
  void opts;
  throw new RamifyError('INTERNAL', 'demo best-of-n is not built yet');
}
