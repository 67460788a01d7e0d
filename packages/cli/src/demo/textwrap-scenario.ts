/**
 * The best-of-N demo's scenario, on real input: CPython's `textwrap` module and its own test suite
 * (`test.test_textwrap`, from Debian's libpython3.11-testsuite).
 *
 * The break: in `textwrap.dedent`, the branch "current line consistent with and no deeper than the
 * previous winner: it's the new winner" stops updating the margin. Each candidate fix is an edit an
 * agent might plausibly try; only one restores the upstream behaviour. The real tests decide.
 */

export const TARGET_FILE = '/usr/lib/python3.11/textwrap.py';
export const TEST_COMMAND = 'python3 -m unittest test.test_textwrap 2>&1';

/** The upstream line and the broken one (exact text of the bookworm file). */
const UPSTREAM = `        elif margin.startswith(indent):
            margin = indent`;
const BROKEN = `        elif margin.startswith(indent):
            margin = margin`;

export interface CandidateFix {
  /** Short name shown in the table. */
  name: string;
  /** What the "agent" believed. */
  idea: string;
  /** Replacement for the broken branch. */
  replacement: string;
}

export const CANDIDATE_FIXES: CandidateFix[] = [
  {
    name: 'truncate-margin',
    idea: 'cut the margin to the current indent length',
    replacement: `        elif margin.startswith(indent):
            margin = margin[:len(indent) + 1]`,
  },
  {
    name: 'take-new-indent',
    idea: 'the shallower indent becomes the margin',
    replacement: UPSTREAM,
  },
  {
    name: 'strip-margin',
    idea: 'normalise the margin by stripping it',
    replacement: `        elif margin.startswith(indent):
            margin = margin.strip()`,
  },
  {
    name: 'common-prefix',
    idea: 'recompute the common prefix with os.path.commonprefix',
    replacement: `        elif margin.startswith(indent):
            import os.path; margin = os.path.commonprefix([margin, indent + 'x'])`,
  },
];

/** Python that replaces `find` with `replace` in TARGET_FILE exactly once, or exits 3. */
export function patchScript(find: string, replace: string): string {
  return [
    'import sys, pathlib',
    `p = pathlib.Path(${JSON.stringify(TARGET_FILE)})`,
    's = p.read_text()',
    `f, r = ${JSON.stringify(find)}, ${JSON.stringify(replace)}`,
    'if s.count(f) != 1: sys.exit(3)',
    'p.write_text(s.replace(f, r))',
    'import importlib.util, py_compile; py_compile.compile(str(p))',
  ].join('\n');
}

/** The edit that introduces the break. */
export const breakScript = (): string => patchScript(UPSTREAM, BROKEN);
/** The edit a candidate makes on top of the break. */
export const fixScript = (fix: CandidateFix): string => patchScript(BROKEN, fix.replacement);

export interface TestCounts {
  ran: number;
  failed: number;
  passed: number;
}

/** Parse unittest's summary ("Ran 68 tests in 0.1s" / "FAILED (failures=2, errors=1)" / "OK"). */
export function parseUnittest(output: string): TestCounts {
  const ran = Number(/Ran (\d+) tests?/.exec(output)?.[1] ?? 0);
  const failures = Number(/failures=(\d+)/.exec(output)?.[1] ?? 0);
  const errors = Number(/errors=(\d+)/.exec(output)?.[1] ?? 0);
  const failed = ran === 0 ? 1 : failures + errors;
  return { ran, failed, passed: Math.max(0, ran - failures - errors) };
}
