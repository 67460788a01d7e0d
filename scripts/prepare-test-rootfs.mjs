#!/usr/bin/env node
// Build (or reuse) the `base` template's root filesystem layers in the shared cache, without booting,
// and print the rootfs directory on the last line. Used by scripts/run-tests.mjs for runtime tests.
// Cache: $RAMIFY_CACHE_DIR or /var/cache/ramify (content-addressed; reused across runs and daemons).
import { join } from 'node:path';
import { AGENT_BUNDLE_PATH } from '@ramify/agent';
import {
  BASE_TEMPLATE_SPEC, DEFAULT_DEBIAN_MIRRORS, LayerCache, agentFilesSha256, buildFilesLayer, computeLayerKeys, debootstrap,
  hostDebianArch, resolveTemplate,
} from '@ramify/template-builder';

const cacheDir = process.env.RAMIFY_CACHE_DIR ?? '/var/cache/ramify';
const cache = new LayerCache(join(cacheDir, 'templates'));
const resolved = await resolveTemplate(BASE_TEMPLATE_SPEC, async () => null);
const keys = computeLayerKeys(resolved, {
  arch: await hostDebianArch(),
  mirrors: DEFAULT_DEBIAN_MIRRORS,
  agentBundleSha256: await agentFilesSha256(AGENT_BUNDLE_PATH),
  runtime: 'gvisor',
});
const log = (line) => process.stderr.write(`  ${line}\n`);
const { layer: rootfs } = await cache.ensure('rootfs', keys.rootfs, { packages: resolved.packages, mirrors: DEFAULT_DEBIAN_MIRRORS }, (dir) =>
  debootstrap(dir, { packages: resolved.packages, mirrors: DEFAULT_DEBIAN_MIRRORS, onLine: log }));
const { layer: files } = await cache.ensure('files', keys.files, { rootfs: keys.rootfs, files: resolved.files.map((f) => f.path) }, (dir) =>
  buildFilesLayer(dir, { baseRootfsDir: rootfs.rootfsDir, files: resolved.files, agentBundlePath: AGENT_BUNDLE_PATH, onLine: log }));
console.log(files.rootfsDir);
