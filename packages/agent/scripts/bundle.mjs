#!/usr/bin/env node
/**
 * Bundle the in-sandbox agent (`src/main.ts` and its dependencies: @msgpack/msgpack and contracts'
 * errors) into ONE file, `packages/agent/dist/agent.mjs`, for Node 18 (Debian bookworm's nodejs), and
 * copy the one native piece beside it: node-pty's prebuilt addon (N-API, so any Node >= 18 loads it),
 * as `node_modules/@lydell/node-pty-<platform>-<arch>/pty.node`, where the bundle's `require` finds it.
 * Templates copy both (see template-builder's `agentFiles`).
 * Usage: node packages/agent/scripts/bundle.mjs [--outfile PATH]
 */
import { build } from 'esbuild';
import { copyFile, mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
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
  // The agent needs only contracts' errors and terminal sizes; the package index would also pull in zod.
  alias: { '@ramify/contracts': resolve(pkgDir, '../contracts/src/agent-runtime.ts') },
  mainFields: ['module', 'main'], // msgpack's ESM build (tree-shakes, no CJS shim)
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
});
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
const addonPackage = `@lydell/node-pty-${process.platform}-${process.arch}`;
const addonFrom = createRequire(join(pkgDir, 'package.json')).resolve(`${addonPackage}/pty.node`);
const addonDir = join(dirname(outfile), 'node_modules', addonPackage);
await mkdir(addonDir, { recursive: true });
for (const file of ['pty.node', 'package.json']) await copyFile(join(dirname(addonFrom), file), join(addonDir, file));
process.stdout.write(`agent bundle: ${outfile} (${bytes} bytes)\n`);
