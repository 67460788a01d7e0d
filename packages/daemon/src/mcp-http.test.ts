/**
 * `/mcp` at the HTTP edge, over a core wired to core's FAKE runtime (auth, routing, audit; NOT runtime
 * coverage: real-mcp.test.ts drives the real runtime). The app listens on a loopback port because the
 * MCP server calls this API back over HTTP, as the official MCP client calls it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MCP_TOOL_HEADER, type AuditEntry } from '@ramify/contracts';
import { httpTestBed, type HttpTestBed } from './test-support.js';

let bed: HttpTestBed;
let url: string;
before(async () => {
  bed = await httpTestBed();
  url = await bed.app.listen({ host: '127.0.0.1', port: 0 });
});
after(async () => { await bed.dispose(); });

const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'curl', version: '1' } } };
const post = (headers: Record<string, string | undefined>) => fetch(`${url}/mcp`, {
  method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(headers as Record<string, string>) }, body: JSON.stringify(initialize),
});

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'edge-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

describe('/mcp at the HTTP edge (fake runtime)', () => {
  test('no key, a wrong key and a revoked-looking key are 401 with the API error body; the right key initializes', async () => {
    for (const headers of [{}, { authorization: 'Bearer rmf_wrong' }, { authorization: 'Basic abc' }] as Record<string, string>[]) {
      const res = await post(headers);
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="ramify"');
      assert.equal((await res.json()).error.code, 'UNAUTHORIZED');
    }
    const ok = await post(bed.auth);
    assert.equal(ok.status, 200);
    assert.equal((await ok.json()).result.serverInfo.name, 'ramify');
  });

  test("the official client with a wrong key cannot connect (its error carries the 401)", async () => {
    await assert.rejects(connect('rmf_wrong'), (err: Error & { code?: unknown }) => err.code === 401 && /UNAUTHORIZED/.test(err.message));
  });

  test('GET and DELETE are 405 (stateless: no session stream), still behind the key', async () => {
    assert.equal((await fetch(`${url}/mcp`)).status, 401);
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${url}/mcp`, { method, headers: bed.auth });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'POST');
    }
  });

  test('tool calls act as the calling key and land in the audit log with the tool, reads included', async () => {
    const client = await connect(bed.key);
    const created = await client.callTool({ name: 'sandbox_create', arguments: {} });
    assert.equal(created.isError, undefined, JSON.stringify(created));
    const sandboxId = (created.structuredContent as { sandboxId: string }).sandboxId;
    const listed = await client.callTool({ name: 'sandbox_list', arguments: {} });
    assert.ok((listed.structuredContent as { sandboxes: { id: string }[] }).sandboxes.some((s) => s.id === sandboxId));
    const missing = await client.callTool({ name: 'sandbox_get', arguments: { sandboxId: 'sbx_nope' } });
    assert.equal(missing.isError, true);
    await client.close();

    const keyId = (await bed.world.store.listApiKeys())[0]!.id;
    const entries = (await (await fetch(`${url}/v1/audit?limit=20`, { headers: bed.auth })).json()).entries as AuditEntry[];
    const byTool = entries.filter((e) => e.tool !== null).map((e) => [e.tool, e.action, e.method, e.status, e.apiKeyId, e.sandboxId]);
    assert.deepEqual(byTool.reverse(), [
      ['sandbox_create', 'sandbox.create', 'POST', 201, keyId, sandboxId],
      ['sandbox_create', 'read', 'GET', 200, keyId, sandboxId],
      ['sandbox_list', 'read', 'GET', 200, keyId, null],
      ['sandbox_get', 'read', 'GET', 404, keyId, 'sbx_nope'],
    ]);
  });

  test('a malformed tool header is a 400 naming it', async () => {
    const res = await fetch(`${url}/v1/sandboxes`, { headers: { ...bed.auth, [MCP_TOOL_HEADER]: 'Not A Tool!' } });
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal(body.error.code, 'VALIDATION_FAILED');
    assert.equal(body.error.details.field, MCP_TOOL_HEADER);
  });

  test('the OpenAPI document names /mcp', async () => {
    const doc = await (await fetch(`${url}/v1/openapi.json`)).json();
    assert.ok(doc.paths['/mcp'].post.summary.includes('MCP'));
  });
});
