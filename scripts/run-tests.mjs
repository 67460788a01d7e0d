#!/usr/bin/env node
// The whole test suite: every compiled `*.test.js` under packages/, run by node's test runner with its
// summary. Tests that need the real runtime start their own daemons and namespaces and clean up.
// Before running, the `base` template's root filesystem is built once into the shared cache
// (cached by content; the first build on a machine takes ~1 min) and exported as RAMIFY_TEST_ROOTFS.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;

function findTests(dir, out = []) {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules') continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) findTests(p, out);
    else if (name.endsWith('.test.js') && p.includes('/dist/')) out.push(p);
  }
  return out;
}

const only = process.argv.slice(2);
let files = findTests(join(root, 'packages')).sort();
if (only.length) files = files.filter((f) => only.some((o) => f.includes(o)));

const env = { ...process.env };
if (!env.RAMIFY_TEST_ROOTFS) {
  const r = spawnSync(process.execPath, [join(root, 'scripts/prepare-test-rootfs.mjs')], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (r.status !== 0) {
    console.error('could not prepare the base root filesystem for runtime tests');
    process.exit(1);
  }
  env.RAMIFY_TEST_ROOTFS = r.stdout.trim().split('\n').pop();
}

console.log(`running ${files.length} test files:\n${files.map((f) => '  ' + relative(root, f)).join('\n')}`);
const child = spawn(process.execPath, ['--test', '--test-concurrency=1', '--test-reporter=spec', ...files], { stdio: 'inherit', env });
child.on('exit', (code) => process.exit(code ?? 1));
