/**
 * The HTTP app: Fastify with the API's content-type parsers (JSON up to 1 MiB, raw streams passed through
 * unbuffered), bearer auth, team scoping, audit, the one error handler, every route of `/v1` (contracts' routes.ts) and
 * the WebSocket streams. No business logic here: each handler calls one core use-case.
 */
import websocket from '@fastify/websocket';
import { MAX_JSON_BODY_BYTES } from '@ramify/contracts';
import type { Core } from '@ramify/core';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import { activityHook } from './http/activity.js';
import { auditHook } from './http/audit.js';
import { authHook } from './http/auth.js';
import { toHttpError } from './http/errors.js';
import { frameworkError, MAX_PATH_SEGMENT_CHARS, unroutedError } from './http/unrouted.js';
import { invalidJsonBody, jsonFailure } from './http/validate.js';
import { mcpToolHook } from './http/mcp-tool.js';
import { freshRequestContext } from './http/request-context.js';
import { scopeHook } from './http/scope.js';
import { mountRoutes, type RouteSpec, type TracedCalls } from './http/route.js';
import { catalogRoutes } from './routes/catalog.js';
import { egressRoutes } from './routes/egress.js';
import { portRoutes } from './routes/ports.js';
import { fileRoutes } from './routes/files.js';
import { metaRoutes } from './routes/meta.js';
import { networkRoutes } from './routes/networks.js';
import { processRoutes } from './routes/processes.js';
import { sandboxRoutes } from './routes/sandboxes.js';
import { sshRoutes } from './routes/ssh.js';
import { teamRoutes } from './routes/teams.js';
import { eventRoutes } from './routes/events.js';
import { webhookRoutes } from './routes/webhooks.js';
import { metricsRoute } from './routes/metrics.js';
import type { DaemonMetrics } from './observability/metrics.js';
import { usageRoutes } from './routes/usage.js';
import { mountStreams } from './routes/streams/index.js';
import { mcpDocs, mountMcp } from './routes/mcp.js';
import { installForwarding } from './roles/forward.js';
import { installForwardedCheck } from './roles/forward-audit.js';
import { installPlacementCheck } from './roles/placement-check.js';
import type { ServeRole } from './roles/role.js';

export interface BuildAppOptions {
  core: Core;
  /** Logger for Fastify's own lines (a pino instance); default none. Request lines are never logged. */
  loggerInstance?: FastifyBaseLogger;
  /** The daemon's metrics: `/metrics` serves them and errors are counted; absent or null: none (`/metrics` is 503). */
  metrics?: DaemonMetrics | null;
  /** `single` (default): every route served here; `api`: calls on sandboxes forwarded to their hosts; `host`: placed calls checked (roles/). */
  role?: ServeRole;
  /** Which API calls are traces (see {@link TracedCalls}); default `writes`. */
  traced?: TracedCalls;
}

/** Every declarative route of the API (WebSockets are mounted separately). */
export const API_ROUTES: readonly RouteSpec[] = [
  ...sandboxRoutes, ...portRoutes, ...egressRoutes, ...processRoutes, ...fileRoutes, ...catalogRoutes, ...sshRoutes, ...teamRoutes, ...networkRoutes, ...eventRoutes, ...webhookRoutes, ...usageRoutes,
];

/** Build (not start) the app; `app.inject` drives it in-process, `app.listen` serves it. */
export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const { core } = options;
  const app = Fastify({
    ...(options.loggerInstance ? { loggerInstance: options.loggerInstance } : { logger: false }),
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: MAX_JSON_BODY_BYTES,
    return503OnClosing: true,
    routerOptions: { maxParamLength: MAX_PATH_SEGMENT_CHARS },
    // A URL the router refuses (too long a segment, bad percent-encoding) answers in the API's layout (http/unrouted.ts).
    frameworkErrors: (error, _request, reply) => {
      const err = frameworkError(error);
      void (reply as FastifyReply).code(err.status).send(err.toBody());
    },
  });

  app.decorateRequest('ramify', null as never);
  app.addHook('onRequest', async (request) => {
    request.ramify = freshRequestContext();
  });
  app.addHook('onRequest', authHook(core.store, core.clock));
  app.addHook('onRequest', mcpToolHook());
  // After the tool hook: a call refused for another team's sandbox is still audited with its tool.
  app.addHook('onRequest', scopeHook(core));
  // After auth and scope: nothing is forwarded or placed for a caller without a key or for another team's sandbox.
  if (options.role === 'api') installForwarding(app, core);
  if (options.role === 'host') {
    installForwardedCheck(app, core);
    installPlacementCheck(app, core);
  }
  app.addHook('onRequest', activityHook(core));
  app.addHook('onResponse', auditHook(core.store, core.clock, core.logger));

  // JSON: an empty body is "no body" (POST /pause with Content-Type: application/json and nothing else).
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: MAX_JSON_BODY_BYTES }, (request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') return done(null, undefined);
    // Bad JSON answers as every bad field does (http/validate.ts), not in Fastify's words.
    return json(request, text, (err, value) => (err ? done(invalidJsonBody(jsonFailure(text))) : done(null, value)));
  });
  // Raw bytes (file upload, stdin) and anything else: hand the request stream to the handler unbuffered.
  // Fastify's own text/plain parser goes too: a JSON body sent as text/plain (fetch's default for a
  // string body) is then refused by http/validate.ts as a wrong Content-Type, not as a string where an object belongs.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('application/octet-stream', (_request, payload, done) => done(null, payload));
  app.addContentTypeParser('*', (_request, payload, done) => done(null, payload));

  app.setErrorHandler((err, request, reply) => {
    const mapped = toHttpError(err);
    if (mapped.status >= 500) {
      const detail = mapped.unexpected && err instanceof Error ? err.stack : err instanceof Error ? err.message : String(err);
      core.logger.error(mapped.unexpected ? 'unexpected error' : 'request failed', { method: request.method, url: request.url, code: mapped.body.error.code, error: detail });
    }
    if (request.ramify) request.ramify.errorCode = mapped.body.error.code;
    options.metrics?.error(mapped.body.error.code);
    // A request that failed before its body was read whole (an upload cut off by a pause) leaves unread
    // bytes on its connection: close it after the answer. A client reusing it would queue its next
    // request behind them, and undici does (a resume stuck behind a dead upload until its timeout).
    if (!request.raw.complete) void reply.header('connection', 'close');
    // RFC 9110 §11.6.1: a 401 names its scheme (MCP clients read it to tell a key problem from OAuth).
    if (mapped.status === 401) void reply.header('www-authenticate', 'Bearer realm="ramify"');
    return reply.code(mapped.status).send(mapped.body);
  });
  app.setNotFoundHandler((request, reply) => {
    const err = unroutedError(request.method, request.url);
    if (err.code === 'METHOD_NOT_ALLOWED') void reply.header('allow', (err.details?.['allowed'] as string[]).join(', '));
    return reply.code(err.status).send(err.toBody());
  });

  // Frames carry stdin chunks and control messages; 16 MiB bounds one frame, not a stream.
  await app.register(websocket, { options: { maxPayload: 16 << 20 } });
  const routes = [...API_ROUTES, metricsRoute(options.metrics ?? null)];
  mountRoutes(app, core, [...metaRoutes(routes, mcpDocs), ...routes], options.traced);
  mountStreams(app, core);
  mountMcp(app);
  return app;
}
