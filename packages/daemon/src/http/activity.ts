/**
 * Every API request that names a sandbox (`/v1/sandboxes/:id/...`) is use of it, for idle auto-pause: it
 * is held open from the moment it arrives until its response is done (a long poll, a streamed download or
 * upload count for as long as they last). WebSocket streams hold their sandbox themselves, until the socket
 * closes (routes/streams.ts). Runs after auth: a request refused for its key is no use of anything.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Core } from '@ramify/core';

/** The onRequest hook. */
export function activityHook(core: Core): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  return async (request, reply) => {
    const id = (request.params as { id?: unknown } | undefined)?.id;
    if (typeof id !== 'string' || !request.url.startsWith('/v1/sandboxes/') || request.headers.upgrade !== undefined) return;
    const release = core.activity.hold(id);
    reply.raw.once('close', release);
    reply.raw.once('finish', release);
  };
}
