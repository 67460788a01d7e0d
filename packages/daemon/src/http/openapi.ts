/**
 * The OpenAPI 3.1 document of `/v1`, assembled from the same route list and zod schemas the daemon
 * validates with (zod 4's `z.toJSONSchema`), plus the WebSocket routes described in prose.
 */
import { ERROR_CODES, ROUTES, type OperationId, type RouteDef } from '@ramify/contracts';
import { z } from 'zod';
import type { RouteSpec } from './route.js';

type JsonSchema = Record<string, unknown>;

function schemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  try {
    const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
    return rest;
  } catch {
    return {};
  }
}

const ErrorSchema: JsonSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string', enum: Object.keys(ERROR_CODES) }, message: { type: 'string' }, details: { type: 'object' } },
    },
  },
};

/** How egress policies read across routes (the schemas carry the field-level detail). */
const EGRESS_NOTE = [
  "Egress: a sandbox's policy has a mode, `open`, `allowlist` or `deny-all` (nothing leaves: no name resolves, no address is reachable).",
  "A request gives `{ rules }` (no rules = open, any rule = allowlist; a host rule needs a dot) or `{ mode: 'deny-all' }` / `{ mode: 'open' }`:",
  '`PUT /v1/sandboxes/{id}/egress`, and `egress` of `POST /v1/sandboxes`, which also takes a bare rule list.',
  'Snapshots carry the policy: `SnapshotInfo.egress` is the policy in force when the snapshot was taken, and a sandbox created from',
  'the snapshot starts with it (enforced before its restore) unless the create gives `egress`; `null`: none recorded (a template image, or an',
  'old snapshot whose sandbox is gone), such sandboxes start open.',
].join(' ');

/** Extra documented routes that are not in the declarative list (WebSockets, `/mcp`); method and path come from the route table. */
export interface ExtraOperation {
  operation: OperationId;
  summary: string;
  description: string;
  /** OpenAPI responses; default a WebSocket upgrade (101). */
  responses?: Record<string, unknown>;
}

/** An OpenAPI path from a table path: `/v1/sandboxes/:id` → `/v1/sandboxes/{id}`. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z]+)/g, '{$1}');
}

/**
 * What an operation carries from the route table: its `operationId`, no security for a public route,
 * and the table's own fields as extensions (`x-ramify-auth`, `x-ramify-target`, `x-ramify-transport`,
 * `x-ramify-action`), so a reader of the document sees who may call it and where it runs.
 */
function tableFields(operationId: OperationId, def: RouteDef): Record<string, unknown> {
  return {
    operationId,
    ...(def.auth === 'public' ? { security: [] } : {}),
    'x-ramify-auth': def.auth,
    'x-ramify-target': def.target,
    'x-ramify-transport': def.transport,
    ...(def.action ? { 'x-ramify-action': def.action } : {}),
  };
}

/** Build the document. */
export function buildOpenApi(routes: readonly RouteSpec[], extras: readonly ExtraOperation[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const def: RouteDef = ROUTES[r.operation];
    const path = openApiPath(def.path);
    const parameters: unknown[] = [];
    for (const name of def.path.match(/:([A-Za-z]+)/g) ?? []) {
      parameters.push({ name: name.slice(1), in: 'path', required: true, schema: { type: name === ':pid' ? 'integer' : 'string' } });
    }
    if (r.query) {
      const q = schemaOf(r.query, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
      for (const [name, schema] of Object.entries(q.properties ?? {})) {
        parameters.push({ name, in: 'query', required: q.required?.includes(name) ?? false, schema });
      }
    }
    const status = String(r.status ?? 200);
    const success =
      r.status === 204
        ? { description: 'done' }
        : r.response === 'raw'
          ? { description: 'raw bytes', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } }
          : r.response === 'ndjson'
            ? { description: 'newline-delimited JSON events', content: { 'application/x-ndjson': { schema: { type: 'string' } } } }
            : { description: 'ok', content: r.response ? { 'application/json': { schema: schemaOf(r.response, 'output') } } : undefined };
    const body =
      r.body === 'raw'
        ? { required: true, content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } }
        : r.body
          ? { required: !r.body.safeParse(undefined).success, content: { 'application/json': { schema: schemaOf(r.body, 'input') } } }
          : undefined;
    (paths[path] ??= {})[def.method.toLowerCase()] = {
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      ...tableFields(r.operation, def),
      ...(parameters.length ? { parameters } : {}),
      ...(body ? { requestBody: body } : {}),
      responses: { [status]: success, default: { description: 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } } },
    };
  }
  for (const e of extras) {
    const def: RouteDef = ROUTES[e.operation];
    (paths[openApiPath(def.path)] ??= {})[def.method.toLowerCase()] = {
      summary: e.summary, description: e.description, ...tableFields(e.operation, def), responses: e.responses ?? { '101': { description: 'switching to WebSocket' } },
    };
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Ramify API', version, description: `Self-hosted sandboxes that pause, resume and fork. Durations in ms, sizes in bytes.\n\n${EGRESS_NOTE}` },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key rmf_...' } }, schemas: { Error: ErrorSchema } },
    paths,
  };
}
