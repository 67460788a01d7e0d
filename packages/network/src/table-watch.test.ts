/**
 * The table watchdog reacts to deletions as the kernel reports them: with polling set to ten minutes, a
 * table deleted from outside and an `ip rule` deleted from outside are both put back. Real nft and ip on
 * the host's namespace, touching only a table and a rule of this test's own (removed at the end). Skipped
 * when not root or without nft.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, runChecked } from './exec.js';
import { isDeletionEvent, watchTable } from './table-watch.js';

const TABLE = 'rmtw_watch_test';
const RULE = ['from', '10.254.254.254', 'lookup', '254', 'priority', '31999'];
const rootSkip = process.getuid?.() !== 0 ? 'needs root (nft, ip rule)' : (await run(['nft', '--version']).catch(() => ({ code: 1 }))).code !== 0 ? 'nft is not installed' : false;
const NO_POLLING = { intervalMs: 600_000, safetyIntervalMs: 600_000 };

/** Resolve once `check` is true; fails after `ms` (a bound, not a timing under test). */
async function until(check: () => Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const tableThere = async (): Promise<boolean> => (await run(['nft', 'list', 'table', 'inet', TABLE])).code === 0;
const ruleThere = async (): Promise<boolean> => (await run(['ip', 'rule', 'list', 'priority', '31999'])).stdout.includes('10.254.254.254');

after(async () => {
  await run(['nft', 'delete', 'table', 'inet', TABLE]);
  await run(['nft', 'delete', 'table', 'inet', `${TABLE}_probe`]);
  while (await ruleThere()) await run(['ip', 'rule', 'del', ...RULE]);
});

test('deletion lines of nft monitor and ip monitor rule are recognised; additions are not', () => {
  assert.equal(isDeletionEvent('delete table inet rmf'), true);
  assert.equal(isDeletionEvent('delete rule inet rmf output handle 4'), true);
  assert.equal(isDeletionEvent('Deleted 32000:\tfrom 10.9.9.9 lookup 99'), true);
  assert.equal(isDeletionEvent('add table inet rmf'), false);
  assert.equal(isDeletionEvent('delete element inet rmf allow4 { 1.2.3.4 }'), false, 'set elements come and go with DNS grants');
  assert.equal(isDeletionEvent('32000:\tfrom 10.9.9.9 lookup 99'), false);
});

test('a table and an ip rule deleted from outside are put back at once, with polling off', { skip: rootSkip }, async () => {
  let calls = 0;
  const ensure = async (): Promise<boolean> => {
    calls++;
    let reinstalled = false;
    if (!(await tableThere())) {
      await runChecked(['nft', 'add', 'table', 'inet', TABLE]);
      reinstalled = true;
    }
    if (!(await ruleThere())) {
      await runChecked(['ip', 'rule', 'add', ...RULE]);
      reinstalled = true;
    }
    return reinstalled;
  };
  await ensure();
  let reinstalls = 0;
  const stop = watchTable(ensure, { ...NO_POLLING, onReinstall: () => reinstalls++ });
  try {
    // The monitors are up once a deletion of a scratch table of ours reaches `ensure`.
    await until(async () => {
      const before = calls;
      await run(['nft', 'add', 'table', 'inet', `${TABLE}_probe`]);
      await run(['nft', 'delete', 'table', 'inet', `${TABLE}_probe`]);
      await new Promise((r) => setTimeout(r, 100));
      return calls > before;
    }, 'the monitors report deletions');
    await runChecked(['nft', 'delete', 'table', 'inet', TABLE]);
    await until(tableThere, 'the watchdog re-adds the table');
    await runChecked(['ip', 'rule', 'del', ...RULE]);
    await until(ruleThere, 'the watchdog re-adds the rule');
    assert.ok(reinstalls >= 2, `reported each re-install (got ${reinstalls})`);
  } finally {
    stop();
  }
});
