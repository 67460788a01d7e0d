/**
 * TEST SUPPORT for the daemon's HTTP-edge tests: the app over a core wired to core's FAKE runtime,
 * network and agent (plus a real SQLite store). These tests cover validation, auth, error mapping,
 * audit and routing, never a real runtime.
 */
import { createApiKey, type Store } from '@ramify/core';
import { createTestWorld, type TestWorld } from '@ramify/core/testing';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';

export interface HttpTestBed {
  world: TestWorld;
  app: FastifyInstance;
  /** A valid API key. */
  key: string;
  /** `Authorization` header with {@link key}. */
  auth: { authorization: string };
  dispose(): Promise<void>;
}

/** The app over a fake-runtime core; `wrapStore` may replace store methods (to inject failures). */
export async function httpTestBed(wrapStore?: (store: Store) => Store): Promise<HttpTestBed> {
  const world = await createTestWorld();
  const core = wrapStore ? { ...world.core, store: wrapStore(world.core.store) } : world.core;
  const { key } = await createApiKey(world.store, world.clock, 'test');
  const app = await buildApp({ core });
  await app.ready();
  return {
    world,
    app,
    key,
    auth: { authorization: `Bearer ${key}` },
    dispose: async () => {
      // injectWS's in-memory sockets never signal their end: drop server-side sockets so ws's 30 s close timer goes too.
      for (const client of app.websocketServer?.clients ?? []) client.terminate();
      await app.close();
      await world.dispose();
    },
  };
}

/** `POST /v1/sandboxes` with `body` on `bed`; asserts 201 and resolves with the created sandbox's id. */
export async function createViaApi(bed: HttpTestBed, body: Record<string, unknown> = {}): Promise<{ id: string }> {
  const res = await bed.app.inject({ method: 'POST', url: '/v1/sandboxes', headers: bed.auth, payload: body });
  if (res.statusCode !== 201) throw new Error(`create: expected 201, got ${res.statusCode}: ${res.body}`);
  return res.json();
}

/** `Authorization` headers of a key. */
export type AuthHeaders = { authorization: string };
/** The headers of `key`. */
export const bearer = (key: string): AuthHeaders => ({ authorization: `Bearer ${key}` });

/** An in-process call on `bed`'s app: its status and body (parsed when JSON). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- test support: tests read fields of any route
export async function callApp(bed: HttpTestBed, headers: AuthHeaders | Record<string, never>, method: string, url: string, payload?: unknown): Promise<{ status: number; body: any }> {
  const res = await bed.app.inject({ method: method as 'GET', url, headers, ...(payload !== undefined ? { payload: payload as object } : {}) });
  return { status: res.statusCode, body: String(res.headers['content-type']).startsWith('application/json') ? res.json() : res.body };
}

/** Make team `id` with `bed`'s operator key, and a key of it with `role`; resolves with the key's headers. */
export async function teamWithKey(bed: HttpTestBed, id: string, role: 'admin' | 'member' = 'member'): Promise<AuthHeaders> {
  const team = await callApp(bed, bed.auth, 'POST', '/v1/teams', { id });
  if (team.status !== 201) throw new Error(`team create: ${team.status} ${JSON.stringify(team.body)}`);
  const made = await callApp(bed, bed.auth, 'POST', '/v1/keys', { team: id, role });
  if (made.status !== 201) throw new Error(`key create: ${made.status} ${JSON.stringify(made.body)}`);
  return bearer(made.body.key);
}
