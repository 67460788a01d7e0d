/**
 * Bearer API key authentication (`Authorization: Bearer rmf_...`) for every route whose config does not
 * say `auth: false`. A missing, malformed, unknown or revoked key is 401 `UNAUTHORIZED`.
 */
import { RamifyError } from '@ramify/contracts';
import { verifyApiKey, type Clock, type Store } from '@ramify/core';
import type { FastifyRequest } from 'fastify';
import type { RouteConfig } from './route.js';

/** Write `lastUsedAt` at most this often per key, ms. */
const TOUCH_INTERVAL_MS = 60_000;

/** The key of `Authorization: Bearer <key>`, or undefined when the header is absent or not of that form. */
export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  return typeof header === 'string' ? /^Bearer\s+(\S+)$/i.exec(header)?.[1] : undefined;
}

/** The onRequest hook. */
export function authHook(store: Store, clock: Clock): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    const config = request.routeOptions.config as Partial<RouteConfig> | undefined;
    if (!config || config.auth === false || config.auth === undefined) return;
    const token = bearerToken(request);
    if (token === undefined) throw new RamifyError('UNAUTHORIZED', 'missing API key: send Authorization: Bearer rmf_...');
    const key = await verifyApiKey(store, token);
    if (!key) throw new RamifyError('UNAUTHORIZED', 'invalid API key');
    request.ramify.apiKeyId = key.id;
    const now = clock.now();
    if (key.lastUsedAt === null || now - key.lastUsedAt > TOUCH_INTERVAL_MS) await store.touchApiKey(key.id, now);
  };
}
