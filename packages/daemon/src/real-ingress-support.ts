/**
 * TEST SUPPORT for the real ingress tests over plain HTTP (real-ingress*.test.ts): API calls against an
 * in-process daemon, a sandbox serving files with Python's `http.server` on a port, its URL, and a raw
 * request to the ingress for a host. Resolved lazily through `daemon()` so a restarted daemon is followed.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { HTTP_SERVER_PY } from './real-ingress-servers.js';
import { apiCaller, until, type ApiReply } from './real-test-support.js';

/** Where the daemon under test answers: its API URL and key, and the ingress's loopback port. */
export interface IngressDaemon {
  url: string;
  key: string;
  ingressPort: number;
  /** The ingress's address; default 127.0.0.1. */
  ingressAddress?: string;
}

/** One answer of the ingress. */
export interface IngressReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** The helpers {@link ingressTestKit} returns. */
export interface IngressTestKit {
  call(method: string, path: string, body?: unknown): Promise<ApiReply>;
  /** Run `cmd` in the foreground; asserts exit code 0; its stdout. */
  sh(id: string, cmd: string): Promise<string>;
  /** Start `cmd` in the background. */
  background(id: string, cmd: string): Promise<void>;
  /** Write `content` to `path` in the sandbox. */
  put(id: string, path: string, content: string): Promise<void>;
  /** A request to the ingress for `host` (as a browser or curl would send it to *.localhost). */
  ingress(host: string, path?: string, options?: { method?: string; headers?: Record<string, string> }): Promise<IngressReply>;
  /** Create a sandbox (`body` as the API takes it) serving `www` under /root/www over HTTP on `port` bound to `bind`; its id once it listens. */
  serving(body: Record<string, unknown>, port: number, bind?: string, www?: Record<string, string>): Promise<string>;
  /** `GET /v1/sandboxes/{id}/ports/{port}/url`. */
  urlOf(id: string, port: number): Promise<{ url: string; host: string; token?: string }>;
}

/** Test helpers against the daemon `daemon()` names (undefined before it starts). */
export function ingressTestKit(daemon: () => IngressDaemon | undefined): IngressTestKit {
  const call = apiCaller(() => daemon()?.url, () => daemon()?.key ?? '');
  const sh = async (id: string, cmd: string): Promise<string> => {
    const r = await call('POST', `/v1/sandboxes/${id}/commands`, { cmd, timeoutMs: 300_000 });
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.exitCode, 0, `${cmd}: ${r.json.stderr}`);
    return r.json.stdout as string;
  };
  const background = async (id: string, cmd: string): Promise<void> => {
    const r = await call('POST', `/v1/sandboxes/${id}/commands`, { cmd, background: true });
    assert.equal(r.status, 200, JSON.stringify(r.json));
  };
  const put = async (id: string, path: string, content: string): Promise<void> => {
    const res = await fetch(`${daemon()?.url}/v1/sandboxes/${id}/files?path=${encodeURIComponent(path)}`, { method: 'PUT', headers: { authorization: `Bearer ${daemon()?.key}`, 'content-type': 'application/octet-stream' }, body: content });
    assert.equal(res.status, 200, await res.text());
  };
  const ingress: IngressTestKit['ingress'] = (host, path = '/', options = {}) =>
    new Promise((resolve, reject) => {
      const req = request({ host: daemon()?.ingressAddress ?? '127.0.0.1', port: daemon()?.ingressPort, path, method: options.method ?? 'GET', headers: { host, ...options.headers } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      });
      req.on('error', reject);
      req.end();
    });
  const serving: IngressTestKit['serving'] = async (body, port, bind = '0.0.0.0', www = { 'index.html': 'hello from the sandbox\n' }) => {
    const r = await call('POST', '/v1/sandboxes', { timeoutMs: 1_800_000, ...body });
    assert.equal(r.status, 201, JSON.stringify(r.json));
    const id = r.json.id as string;
    await put(id, '/root/srv.py', HTTP_SERVER_PY);
    for (const [name, content] of Object.entries(www)) await put(id, `/root/www/${name}`, content);
    await background(id, `python3 /root/srv.py ${port} ${bind}`);
    await until(async () => (await sh(id, `python3 -c "import socket; s=socket.socket(); s.settimeout(1); print(s.connect_ex(('${bind === '0.0.0.0' ? '127.0.0.1' : bind}', ${port})))"`)).trim() === '0', `the server in ${id} listens on ${port}`);
    return id;
  };
  const urlOf: IngressTestKit['urlOf'] = async (id, port) => {
    const r = await call('GET', `/v1/sandboxes/${id}/ports/${port}/url`);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    return r.json;
  };
  return { call, sh, background, put, ingress, serving, urlOf };
}
