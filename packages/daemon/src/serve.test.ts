/**
 * `serve()` over a real socket with the real store and snapshot storage, but core's FAKE runtime,
 * network and agent (bootstrap, API key file, restart + reconcile wiring, streamed upload over HTTP, the
 * data directory's lock and the log's start, failed-start and stop lines; NOT runtime coverage).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import type { DestinationStream } from 'pino';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeNetwork, FakeRuntime, seedTemplate } from '@ramify/core/testing';
import { DEFAULT_MAX_OUTPUT_BYTES, MAX_OUTPUT_BYTES_CEILING } from '@ramify/contracts';
import { API_KEY_FILE, DEFAULT_DATA_DIR, resolveDataDir, resolveMaxOutputBytes, resolveWebhookAllowPrivate } from './config.js';
import { dataDirHolder } from './data-dir-lock.js';
import { serve, type RamifyServer } from './serve.js';

let dataDir: string;
before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'ramify-daemon-'));
});
after(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

const runtime = new FakeRuntime();
const network = new FakeNetwork();
/** Start a daemon on `dataDir` with the fake runtime; its log is off, or at `info` into `log`. */
const start = (print: (line: string) => void, log?: DestinationStream): Promise<RamifyServer> =>
  serve({ dataDir, port: 0, print, overrides: { runtimes: [runtime], network, connectAgent: runtime.connectAgent, templateBuilder: null }, ...(log ? { logLevel: 'info', logDestination: log } : { logLevel: 'silent' }) });

/** A log destination that keeps the JSON lines written to it. */
function logCapture(): DestinationStream & { lines(): Array<Record<string, unknown>> } {
  const written: string[] = [];
  return { write: (line: string) => void written.push(line), lines: () => written.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('serve() with the fake runtime (bootstrap and restart wiring only)', () => {
  test('first start makes one API key, prints it once, saves it 0600; a restart re-attaches running sandboxes and keeps their last use', async () => {
    const printed: string[] = [];
    const first = await start((line) => printed.push(line));
    assert.ok(first.newApiKey?.startsWith('rmf_'));
    assert.equal(printed.length, 1);
    assert.ok(printed[0].includes(first.newApiKey ?? '-'));
    const keyFile = join(dataDir, API_KEY_FILE);
    assert.equal((await readFile(keyFile, 'utf8')).trim(), first.newApiKey);
    assert.equal((await stat(keyFile)).mode & 0o777, 0o600);
    assert.equal((await stat(dataDir)).mode & 0o777, 0o700);
    assert.match(first.url, /^http:\/\/127\.0\.0\.1:\d+$/);

    await seedTemplate(first.core.store, first.core.storage, { files: {}, endpoints: [], identities: [] });
    const auth = { authorization: `Bearer ${first.newApiKey}` };
    const health = await fetch(`${first.url}/v1/health`);
    assert.equal(health.status, 200);
    const created = await fetch(`${first.url}/v1/sandboxes`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(created.status, 201);
    const { id } = (await created.json()) as { id: string };

    const beforeUpload = Date.now();
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 4; i++) controller.enqueue(new Uint8Array(512 * 1024).fill(97 + i));
        controller.close();
      },
    });
    const put = await fetch(`${first.url}/v1/sandboxes/${id}/files?path=/root/blob`, {
      method: 'PUT', headers: { ...auth, 'content-type': 'application/octet-stream' }, body: chunks, duplex: 'half',
    } as RequestInit & { duplex: 'half' });
    assert.equal(put.status, 200, await put.clone().text());
    assert.equal(((await put.json()) as { size: number }).size, 2 * 1024 * 1024);
    await first.close();

    const second = await start((line) => printed.push(line));
    try {
      assert.equal(second.newApiKey, null);
      assert.equal(printed.length, 1, 'the key is printed on the first start only');
      assert.ok(second.core.sessions.peek(id), 'reconcile re-attached the running sandbox');
      const lastActiveAt = (await second.core.store.getSandbox(id))?.lastActiveAt ?? 0;
      assert.ok(lastActiveAt >= beforeUpload, 'the close stored the upload as the last use (the idle clock survives the restart)');
      const exec = await fetch(`${second.url}/v1/sandboxes/${id}/commands`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ cmd: 'echo back' }) });
      assert.equal(((await exec.json()) as { stdout: string }).stdout, 'back\n');
    } finally {
      await second.close();
    }
  });

  test('maxOutputBytes flows into the core (default 32 MiB); out of range is refused before anything opens', async () => {
    const server = await serve({ dataDir, port: 0, logLevel: 'silent', print: () => undefined, maxOutputBytes: 7, overrides: { runtimes: [runtime], network, connectAgent: runtime.connectAgent, templateBuilder: null } });
    try {
      assert.equal(server.core.options.maxOutputBytes, 7);
    } finally {
      await server.close();
    }
    assert.equal(resolveMaxOutputBytes(undefined), DEFAULT_MAX_OUTPUT_BYTES);
    assert.equal(resolveMaxOutputBytes(0), 0);
    assert.equal(resolveMaxOutputBytes(MAX_OUTPUT_BYTES_CEILING), MAX_OUTPUT_BYTES_CEILING);
    for (const bad of [-1, 1.5, MAX_OUTPUT_BYTES_CEILING + 1]) assert.throws(() => resolveMaxOutputBytes(bad), { code: 'VALIDATION_FAILED' });
    await assert.rejects(serve({ dataDir, port: 0, logLevel: 'silent', maxOutputBytes: -1, overrides: { runtimes: [runtime], network, connectAgent: runtime.connectAgent, templateBuilder: null } }), { code: 'VALIDATION_FAILED' });
  });

  test('webhook destinations: public only by default; webhookAllowPrivate (or RAMIFY_WEBHOOK_ALLOW_PRIVATE) allows private ones', async () => {
    for (const [option, expected] of [[undefined, false], [true, true]] as const) {
      const server = await serve({ dataDir, port: 0, logLevel: 'silent', print: () => undefined, ...(option === undefined ? {} : { webhookAllowPrivate: option }), overrides: { runtimes: [runtime], network, connectAgent: runtime.connectAgent, templateBuilder: null } });
      try {
        assert.equal(server.core.options.webhooks.allowPrivateDestinations, expected);
      } finally {
        await server.close();
      }
    }
    assert.deepEqual([resolveWebhookAllowPrivate(undefined, {}), resolveWebhookAllowPrivate(undefined, { RAMIFY_WEBHOOK_ALLOW_PRIVATE: '1' }), resolveWebhookAllowPrivate(false, { RAMIFY_WEBHOOK_ALLOW_PRIVATE: 'true' }), resolveWebhookAllowPrivate(undefined, { RAMIFY_WEBHOOK_ALLOW_PRIVATE: 'off' })], [false, true, false, false]);
    assert.throws(() => resolveWebhookAllowPrivate(undefined, { RAMIFY_WEBHOOK_ALLOW_PRIVATE: 'maybe' }), { code: 'VALIDATION_FAILED' });
  });

  test('one daemon per data directory: a second serve() is refused with DATA_DIR_IN_USE naming the first; close() and a failed start free it', async () => {
    const firstLog = logCapture();
    const first = await start(() => undefined, firstLog);
    const program = realpathSync(process.argv[1] as string);
    try {
      const secondLog = logCapture();
      await assert.rejects(start(() => undefined, secondLog), (err: { code?: string; message?: string; details?: Record<string, unknown> }) => {
        assert.equal(err.code, 'DATA_DIR_IN_USE');
        assert.deepEqual({ ...err.details, startedAt: typeof err.details?.startedAt }, { dataDir, pid: process.pid, url: first.url, program, startedAt: 'string' });
        assert.match(err.message ?? '', new RegExp(`'${dataDir}' is in use .*pid ${process.pid}, API ${first.url}, program ${program}, started .*kill ${process.pid} .*--data-dir`));
        return true;
      });
      assert.deepEqual(secondLog.lines().map((l) => [l.msg, l.code, l.dataDir]), [['ramify failed to start', 'DATA_DIR_IN_USE', dataDir]], 'a failed start says so in its log');
      assert.equal((await fetch(`${first.url}/v1/health`)).status, 200, 'the first daemon is untouched');
      assert.equal(dataDirHolder(dataDir)?.url, first.url);
    } finally {
      await first.close('SIGTERM');
    }
    // The stop line mirrors the start line, with the reason, once the lock is released.
    const identity = { url: first.url, dataDir, hostId: first.core.hostId, role: 'single' };
    assert.deepEqual(firstLog.lines().filter((l) => String(l.msg).startsWith('ramify ')).map(({ msg, url, dataDir: dir, hostId, role, reason }) => ({ msg, url, dataDir: dir, hostId, role, reason })),
      [{ msg: 'ramify serving', ...identity, reason: undefined }, { msg: 'ramify stopped', ...identity, reason: 'SIGTERM' }]);
    assert.equal(dataDirHolder(dataDir), null, 'stopped: nothing holds the directory');
    const invalid = logCapture();
    await assert.rejects(serve({ dataDir, port: 0, logLevel: 'info', logDestination: invalid, maxOutputBytes: -1, overrides: { runtimes: [runtime], network, connectAgent: runtime.connectAgent, templateBuilder: null } }), { code: 'VALIDATION_FAILED' });
    assert.deepEqual(invalid.lines().map((l) => [l.msg, l.code]), [['ramify failed to start', 'VALIDATION_FAILED']]);
    const next = await start(() => undefined);
    await next.close();
  });

  test('data directory: option, then RAMIFY_HOME, then /var/lib/ramify', () => {
    assert.equal(resolveDataDir('/x', { RAMIFY_HOME: '/y' }), '/x');
    assert.equal(resolveDataDir(undefined, { RAMIFY_HOME: '/y' }), '/y');
    assert.equal(resolveDataDir(undefined, {}), DEFAULT_DATA_DIR);
  });
});
