#!/usr/bin/env node
/**
 * Bundle the in-sandbox agent (`src/main.ts` and its dependencies: @msgpack/msgpack and contracts'
 * errors) into ONE file, `packages/agent/dist/agent.mjs`, for Node 18 (Debian bookworm's nodejs).
 * Usage: node packages/agent/scripts/bundle.mjs [--outfile PATH]
 */
import { build } from 'esbuild';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgDir = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const outIndex = args.indexOf('--outfile');
const outfile = outIndex >= 0 ? resolve(args[outIndex + 1]) : resolve(pkgDir, 'dist/agent.mjs');

const result = await build({
  entryPoints: [resolve(pkgDir, 'src/main.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node18',
  // The agent needs only contracts' error types; the package index would also pull in zod.
  alias: { '@ramify/contracts': resolve(pkgDir, '../contracts/src/errors.ts') },
  mainFields: ['module', 'main'], // msgpack's ESM build (tree-shakes, no CJS shim)
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
});
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
process.stdout.write(`agent bundle: ${outfile} (${bytes} bytes)\n`);
