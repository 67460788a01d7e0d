/**
 * A real browser through the ingress (issue 10): Debian's `chromium` driven by `playwright-core` (never a
 * downloaded browser) opens a page served from inside a REAL gVisor sandbox (daemon in-process, prefix
 * `rmib`) at its port URL with the token as a query parameter; the ingress swaps it for a cookie and
 * redirects, the page opens a WebSocket back to the sandbox (the cookie goes with it) and shows the echo.
 * The test reads the DOM and writes a screenshot (path printed as a diagnostic). Without the token the
 * browser gets the ingress's HTML 401 page. Skipped, with the reason, when not root, without runsc/nft,
 * without the prepared rootfs, or without chromium (`bash scripts/setup.sh --deps --browser` installs it).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { serve, type RamifyServer } from './serve.js';
import { PAGE_SERVER_PY } from './real-ingress-servers.js';
import { apiCaller, realRuntimeSkip, registerRootfsTemplate, stopRealDaemon, until } from './real-test-support.js';

const CHROMIUM = '/usr/bin/chromium';
const rootfs = process.env.RAMIFY_TEST_ROOTFS;
const skip = realRuntimeSkip(rootfs, ['runsc', 'nft']) || (existsSync(CHROMIUM) ? false : `Debian's chromium is not installed at ${CHROMIUM} (bash scripts/setup.sh --deps --browser, or apt-get install chromium)`);
/** Screenshots go here: the repository's `test-artifacts/` (git-ignored). */
const ARTIFACTS = fileURLToPath(new URL('../../../test-artifacts/', import.meta.url));

const PREFIX = 'rmib';
let dataDir: string;
let server: RamifyServer | undefined;
let key = '';
let browser: Browser | undefined;

const call = apiCaller(() => server?.url, () => key);
const sh = async (id: string, cmd: string): Promise<string> => {
  const r = await call('POST', `/v1/sandboxes/${id}/commands`, { cmd });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return r.json.stdout as string;
};

describe('a real browser (Debian chromium via playwright-core) through the ingress into gVisor', { skip, timeout: 900_000 }, () => {
  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'ramify-ingress-browser-'));
    server = await serve({ dataDir, port: 0, logLevel: 'warn', print: () => undefined, runtimes: ['gvisor'], network: { prefix: PREFIX }, ingress: { host: '127.0.0.1', port: 0 } });
    key = server.newApiKey ?? '';
    await registerRootfsTemplate(server.core, rootfs as string, { templateId: 'tpl_rmib', snapshotId: 'snap_rmib_base' });
    const { chromium } = await import('playwright-core');
    // As root Chromium needs --no-sandbox; *.localhost resolves to loopback inside Chromium itself.
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  });
  after(async () => {
    await browser?.close();
    if (server) await stopRealDaemon(server, call);
    await rm(dataDir, { recursive: true, force: true });
  });

  test('the page loads with the token as a query parameter (swapped for a cookie), its WebSocket echoes, and a screenshot is kept', async (t) => {
    const created = await call('POST', '/v1/sandboxes', { timeoutMs: 900_000, ports: [8000] });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    const id = created.json.id as string;
    const res = await fetch(`${server!.url}/v1/sandboxes/${id}/files?path=/root/page.py`, { method: 'PUT', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/octet-stream' }, body: PAGE_SERVER_PY });
    assert.equal(res.status, 200);
    assert.equal((await call('POST', `/v1/sandboxes/${id}/commands`, { cmd: 'python3 /root/page.py 8000', background: true })).status, 200);
    await until(async () => (await sh(id, `python3 -c "import socket; s=socket.socket(); s.settimeout(1); print(s.connect_ex(('127.0.0.1', 8000)))"`)).trim() === '0', 'the page server listens');
    const { url, token } = (await call('GET', `/v1/sandboxes/${id}/ports/8000/url`)).json as { url: string; token: string };

    const context = await browser!.newContext();
    const page = await context.newPage();
    // No token: the ingress's own HTML page, 401, not the sandbox's.
    const denied = await page.goto(url);
    assert.equal(denied?.status(), 401);
    assert.match(await page.content(), /401 Unauthorized/);
    assert.match(await page.textContent('body') ?? '', /access token/);

    const opened = await page.goto(`${url}?ramify_access_token=${token}`);
    assert.equal(opened?.status(), 200);
    assert.equal(new URL(page.url()).search, '', 'the redirect took the token out of the URL');
    const cookies = await context.cookies(url);
    assert.deepEqual(cookies.map((c) => [c.name, c.httpOnly, c.domain]), [['ramify_access_token', true, new URL(url).hostname]], 'one host-only HttpOnly cookie');
    await page.waitForFunction(() => document.getElementById('echo')?.textContent !== 'waiting');
    assert.equal(await page.textContent('#echo'), 'echo hello from the browser');
    assert.equal(await page.textContent('h1'), 'served from inside a sandbox');

    await mkdir(ARTIFACTS, { recursive: true });
    const shot = join(ARTIFACTS, 'ingress-browser.png');
    await page.screenshot({ path: shot });
    t.diagnostic(`screenshot: ${shot}`);
    await context.close();

    // A WebSocket is logged when it closes (the page just closed it).
    let statuses: string[] = [];
    await until(async () => {
      const log = (await call('GET', `/v1/sandboxes/${id}/ingress/log`)).json;
      statuses = (log.entries as Array<{ status: number; path: string }>).map((e) => `${e.status} ${e.path}`);
      return statuses.includes('101 /ws');
    }, 'the closed WebSocket is in the ingress log');
    assert.ok(statuses.includes('302 /'), 'the exchange is logged without the token');
    assert.ok(statuses.includes('401 /'));
  });
});
