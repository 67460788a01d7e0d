/**
 * Protocol tests: the API key never shows when SDK objects are logged or serialised. Agent code logs
 * handles, listings and errors freely (`console.log(sbx)`, `JSON.stringify(report)`), so every public
 * object that (indirectly) holds the connection is inspected here in every way Node offers.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { format, inspect } from 'node:util';
import { startContractServer, type ContractServer } from './testing/contract-server.js';
import { CommandExitError, RamifyError, Sandbox, resolveConnection } from './index.js';

const KEY = 'rmf_redaction_secret_4b1d';
const WRONG_KEY = 'rmf_wrong_secret_77c2';
let server: ContractServer;
const conn = () => ({ apiUrl: server.url, apiKey: KEY });

before(async () => { server = await startContractServer({ apiKey: KEY }); });
after(async () => { await server.close(); });

/** Every rendering a log line or a serialiser could produce of `value`. */
function renderings(value: unknown): string[] {
  const out = [
    inspect(value),
    inspect(value, { depth: Infinity, showHidden: true, getters: true }),
    format('%o', value),
    format('%O', value),
    String(value),
  ];
  try { out.push(JSON.stringify(value) ?? ''); } catch (err) { out.push(String(err)); }
  if (typeof value === 'object' && value !== null) {
    out.push(inspect({ ...value }, { depth: Infinity, showHidden: true, getters: true }));
    out.push(inspect(Object.fromEntries(Object.entries(value)), { depth: Infinity }));
  }
  if (value instanceof Error) out.push(value.message, value.stack ?? '', inspect(value.cause, { depth: Infinity, showHidden: true }));
  return out;
}

/** Assert that no rendering of `value` contains any of `secrets`. */
function assertKeyHidden(what: string, value: unknown, secrets: string[] = [KEY]): void {
  for (const text of renderings(value)) {
    for (const secret of secrets) assert.ok(!text.includes(secret), `${what} reveals the API key: ${text.slice(0, 2000)}`);
  }
}

/** The error a promise rejects with. */
async function rejection(p: Promise<unknown>): Promise<unknown> {
  try { await p; } catch (err) { return err; }
  assert.fail('expected a rejection');
}

describe('protocol: the API key never appears when SDK objects are logged', () => {
  test('the resolved connection, a sandbox handle, its commands and files', async () => {
    const config = resolveConnection(conn());
    assertKeyHidden('ConnectionConfig', config);
    assert.equal(config.hasApiKey, true);
    assert.equal(config.revealApiKey(), KEY);
    const sbx = await Sandbox.create(conn());
    assertKeyHidden('Sandbox', sbx);
    assertKeyHidden('Sandbox.commands', sbx.commands);
    assertKeyHidden('Sandbox.files', sbx.files);
    assertKeyHidden('Sandbox.fromId', Sandbox.fromId(sbx.sandboxId, conn()));
    assertKeyHidden('forks', await sbx.fork({ count: 2 }));
  });

  test('a background CommandHandle, while running and after exit', async () => {
    const sbx = await Sandbox.create(conn());
    const h = await sbx.commands.run('cat', { background: true, stdin: true });
    assertKeyHidden('CommandHandle (running)', h);
    await h.sendStdin('x');
    await h.closeStdin();
    const result = await h.wait();
    assert.equal(result.stdout, 'x');
    assertKeyHidden('CommandHandle (exited)', h);
    assertKeyHidden('CommandResult', result);
  });

  test('the Sandbox.list paginator, before and after fetching', async () => {
    await Sandbox.create(conn());
    const pager = Sandbox.list({ ...conn(), limit: 1 });
    assertKeyHidden('SandboxPaginator (fresh)', pager);
    assert.ok((await pager.nextItems()).length >= 1);
    assertKeyHidden('SandboxPaginator (after a page)', pager);
  });

  test('an explore report (it holds the winning sandbox)', async () => {
    const source = await Sandbox.create(conn());
    const report = await Sandbox.explore(source, [{ name: 'a', run: async () => 1 }], { score: (r) => r });
    assertKeyHidden('ExploreReport', report);
  });

  test('errors thrown by failed calls: HTTP, WebSocket, unreachable API, wrong key, non-zero exit', async () => {
    const sbx = await Sandbox.create(conn());
    const errors: [string, unknown][] = [
      ['SandboxNotFoundError', await rejection(Sandbox.getInfo('sbx_nope', conn()))],
      ['PROCESS_NOT_FOUND (WebSocket)', await rejection(sbx.commands.connect(424242))],
      ['ConnectionError', await rejection(Sandbox.getInfo('sbx_x', { apiUrl: 'http://127.0.0.1:1', apiKey: KEY }))],
      ['AuthenticationError (HTTP)', await rejection(Sandbox.getInfo(sbx.sandboxId, { apiUrl: server.url, apiKey: WRONG_KEY }))],
      ['AuthenticationError (WebSocket)', await rejection(Sandbox.fromId(sbx.sandboxId, { apiUrl: server.url, apiKey: WRONG_KEY }).commands.run('echo x'))],
      ['CommandExitError', await rejection(sbx.commands.run('exit 3'))],
    ];
    for (const [what, err] of errors) {
      assert.ok(err instanceof RamifyError, `${what}: ${String(err)}`);
      assertKeyHidden(what, err, [KEY, WRONG_KEY]);
    }
    assert.ok(errors.at(-1)?.[1] instanceof CommandExitError);
  });
});
