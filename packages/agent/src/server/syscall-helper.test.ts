import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { SyscallHelper } from './syscall-helper.js';

const root = process.getuid?.() === 0;
const hasTools = ['perl', 'unshare', 'nsenter'].every((tool) => spawnSync('sh', ['-c', 'command -v "$1"', 'sh', tool]).status === 0);
const skip = !root ? 'needs root (a UTS namespace of its own)' : !hasTools ? 'needs perl, unshare and nsenter' : false;

// The helper runs in a UTS namespace of its own (`unshare --uts`): its sethostname changes that namespace,
// never the host's. The clock is not namespaced, so only its refusal of bad input is tested here; the
// real tests (daemon/src/real-pool.test.ts) see it work in sandboxes.
test('sethostname without a process per call: several in a row, each answered; bad names are left to the tool', { skip }, async () => {
  const before = hostname();
  const helper = SyscallHelper.start({ wrap: ['unshare', '--uts'] })!;
  try {
    for (const name of ['rmf-helper-one', 'rmf-helper-two']) {
      assert.equal(await helper.setHostname(name), null);
      const seen = spawnSync('nsenter', ['-t', String(helper.pid), '-u', 'hostname'], { encoding: 'utf8' }).stdout.trim();
      assert.equal(seen, name, 'the helper\'s namespace has the new name');
    }
    assert.equal(await helper.setHostname('bad name; rm -rf /'), undefined, 'not sent: the caller uses the tool');
    assert.equal(hostname(), before, 'the host keeps its name');
  } finally {
    helper.stop();
  }
  assert.equal(await helper.setHostname('rmf-helper-three'), undefined, 'a stopped helper answers undefined');
});

test('a helper that cannot start answers undefined (the tools take over)', async () => {
  const helper = SyscallHelper.start({ wrap: ['/nonexistent/wrapper'] })!;
  assert.equal(await helper.setClock(Date.now()), undefined);
  assert.equal(await helper.setHostname('rmf-x'), undefined);
});
