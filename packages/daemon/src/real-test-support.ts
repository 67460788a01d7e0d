/**
 * Shared by the daemon's end-to-end tests that run a REAL daemon in-process (real gVisor, namespaces,
 * nftables): the skip reason, a raw API caller, and registering the prepared base rootfs as template
 * `base` (what the template builder does, minus mmdebstrap). Test support only.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RuntimeName } from '@ramify/contracts';
import { killSandbox, networkFor, type Core } from '@ramify/core';
import { buildImage } from '@ramify/template-builder';
import { forceCleanup } from './real-egress-support.js';
import { serve, type RamifyServer, type ServeOptions } from './serve.js';
import { cachedTemplateImage } from './testing/template-image-cache.js';

/** Why a real-runtime test cannot run here (`false` when it can): root, the tools, `RAMIFY_TEST_ROOTFS`. */
export function realRuntimeSkip(rootfs: string | undefined, tools: string[] = ['runsc']): string | false {
  if (process.getuid?.() !== 0) return 'needs root (namespaces, runsc, nftables)';
  for (const tool of tools) if (spawnSync('sh', ['-c', 'command -v "$1"', 'sh', tool]).status !== 0) return `${tool} is not installed`;
  if (!rootfs || !existsSync(rootfs)) return 'RAMIFY_TEST_ROOTFS is not set (scripts/run-tests.mjs sets it)';
  return false;
}

/** A JSON response: status and parsed body (test-only: the tests read fields of any route freely). */
export interface ApiReply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test support, not a public type
  json: any;
}

/** `call(method, path, body?)` against `url()` with bearer `key()`; resolved lazily so a restarted daemon is followed. */
export function apiCaller(url: () => string | undefined, key: () => string): (method: string, path: string, body?: unknown) => Promise<ApiReply> {
  return async (method, path, body) => {
    const res = await fetch(`${url()}${path}`, {
      method,
      headers: { authorization: `Bearer ${key()}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : null };
  };
}

/** `sh(id, cmd)`: run `cmd` in the foreground through `call`, assert exit code 0, return its stdout. */
export function shellCaller(call: (method: string, path: string, body?: unknown) => Promise<ApiReply>): (id: string, cmd: string) => Promise<string> {
  return async (id, cmd) => {
    const r = await call('POST', `/v1/sandboxes/${id}/commands`, { cmd });
    if (r.status !== 200 || r.json.exitCode !== 0) throw new Error(`\`${cmd}\` in ${id} failed: ${JSON.stringify(r.json)}`);
    return r.json.stdout as string;
  };
}

/** Poll `check` every 100 ms until it holds; throws naming `what` after `limitMs` (generous: CI machines are slow). */
export async function until(check: () => boolean | Promise<boolean>, what: string, limitMs = 30_000): Promise<void> {
  for (const deadline = Date.now() + limitMs; !(await check()); await new Promise((resolve) => setTimeout(resolve, 100))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
  }
}

/** Resources of the sandbox a test template image is booted in (part of the image cache's key). */
const TEMPLATE_BUILD_RESOURCES = { cpuCount: 1, memoryMB: 1024, diskSizeMB: null };

/**
 * Boot `rootfs` on the daemon's default runtime (`core.runtimes[0]`: gVisor, or the microVM runtime of
 * a daemon that opened only that), checkpoint it idle, and register it as template `base` with the given ids.
 * A gVisor image comes from the machine's test image cache after its first build
 * (testing/template-image-cache.ts; `RAMIFY_TEST_IMAGE_CACHE=off` builds every time).
 */
export async function registerRootfsTemplate(core: Core, rootfs: string, ids: { templateId: string; snapshotId: string }): Promise<void> {
  const { templateId, snapshotId } = ids;
  const runtime = core.runtimes[0]!;
  const manifest = await cachedTemplateImage(core, { rootfsDir: rootfs, snapshotId, templateId, resources: TEMPLATE_BUILD_RESOURCES }, () =>
    buildImage(
      { rootfsDir: rootfs, snapshotId, templateId, run: [], envs: {}, onPhase: () => undefined, onLine: () => undefined },
      {
        runtime, network: networkFor(core), slots: { allocateSlot: (id) => core.store.allocateSlot(id, core.hostId), releaseSlot: (id) => core.store.releaseSlot(id) },
        storage: core.storage, connectAgent: core.connectAgent, resources: TEMPLATE_BUILD_RESOURCES,
      },
    ),
  );
  await core.store.insertSnapshot({
    id: snapshotId, teamId: 'default', name: null, kind: 'template', status: 'ready', runtime: runtime.name, templateId, sandboxId: null,
    parentSnapshotId: null, sizeBytes: manifest.sizeBytes, createdAt: Date.now(), cpuCount: 1, memoryMB: 512, diskSizeMB: null, rootfsDir: rootfs, envs: null, egress: null, hostId: core.hostId,
  });
  await core.store.putTemplate({ id: templateId, teamId: 'default', name: 'base', runtime: runtime.name, specHash: templateId, snapshotId, images: [{ runtime: runtime.name, snapshotId }], parent: null, envs: {}, sizeBytes: manifest.sizeBytes, rootfsDir: rootfs, createdAt: Date.now() });
}

/** Kill every sandbox of `server` (its key's team's through the API, any other team's through core), close it, and remove its namespaces and host table. */
export async function stopRealDaemon(
  server: { close(): Promise<void>; core: Core },
  call: (method: string, path: string, body?: unknown) => Promise<ApiReply>,
): Promise<void> {
  for (const s of (await call('GET', '/v1/sandboxes')).json?.sandboxes ?? []) await call('DELETE', `/v1/sandboxes/${s.id}`);
  // The key sees its own team's sandboxes only: other teams' go through core.
  for (const s of (await server.core.store.listSandboxes({ limit: 1000 })).sandboxes) {
    if (s.state !== 'killed') await killSandbox(server.core, s.id).catch(() => undefined);
  }
  const network = server.core.network as { destroyAll?: () => Promise<void> };
  await server.close();
  await network.destroyAll?.();
}

/** A real in-process daemon with the base rootfs registered as a template (see {@link openRealDaemon}). */
export interface RealDaemon {
  server: RamifyServer;
  /** Its data directory (a temp dir, removed by {@link close}). */
  dataDir: string;
  /** SDK connection options: this daemon, its key, requests allowed minutes (a checkpoint on a loaded machine). */
  conn: { apiUrl: string; apiKey: string; requestTimeoutMs: number };
  call: (method: string, path: string, body?: unknown) => Promise<ApiReply>;
  /** Kill its sandboxes, close it, remove its namespaces and data directory. */
  close(): Promise<void>;
}

/**
 * Serve a daemon opening only `runtime` under network prefix `prefix`, with `rootfs` registered as
 * template `templateId` (and `warmPool` as `serve()`'s, default off; `coreOptions` as `serve()`'s). @throws Error when the daemon reports the runtime unavailable.
 */
export async function openRealDaemon(options: { runtime: RuntimeName; prefix: string; rootfs: string; templateId: string; warmPool?: string; coreOptions?: ServeOptions['coreOptions'] }): Promise<RealDaemon> {
  const dataDir = await mkdtemp(join(tmpdir(), `ramify-${options.prefix}-e2e-`));
  const server = await serve({
    dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: [options.runtime], network: { prefix: options.prefix },
    ...(options.warmPool ? { warmPool: options.warmPool } : {}), ...(options.coreOptions ? { coreOptions: options.coreOptions } : {}),
  });
  const key = server.newApiKey ?? '';
  const call = apiCaller(() => server.url, () => key);
  const close = async (): Promise<void> => {
    // A daemon that cannot be stopped through its API (a test broke it) still leaves nothing behind,
    // and the test process can exit (an open server would keep it, and the real-tests lock, forever).
    await stopRealDaemon(server, call).catch(async () => {
      await server.close().catch(() => undefined);
      await forceCleanup(options.prefix, dataDir);
    });
    await rm(dataDir, { recursive: true, force: true });
  };
  const unavailable = server.core.unavailableRuntimes?.[options.runtime];
  if (unavailable !== undefined) {
    await close();
    throw new Error(`the daemon reports ${options.runtime} unavailable: ${unavailable}`);
  }
  await registerRootfsTemplate(server.core, options.rootfs, { templateId: options.templateId, snapshotId: `snap_${options.templateId}` });
  await server.core.pool.drain(); // The template exists now: a warm pool fills at once.
  return { server, dataDir, conn: { apiUrl: server.url, apiKey: key, requestTimeoutMs: 600_000 }, call, close };
}
