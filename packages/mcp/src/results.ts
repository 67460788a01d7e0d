/**
 * Tool results in MCP's shape: text content for the model plus the same as `structuredContent`, and
 * tool errors (`isError`) that carry Ramify's error code, the message, the details and a hint of what
 * to do next. Nothing a tool throws escapes as a protocol error or crashes the server.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isRamifyError, RamifyError } from '@ramify/sdk';
import { hintFor } from './hints.js';
import type { ToolOutput } from './tools/tool.js';

/** A successful tool result. */
export function toolResult(out: ToolOutput): CallToolResult {
  return { content: [{ type: 'text', text: out.text }], structuredContent: out.data };
}

/** JSON for `structuredContent`: non-finite numbers (an explore score of -Infinity) become null. */
export function jsonSafe<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v))) as T;
}

/** `err` as a RamifyError: Ramify's own as they are, anything else `INTERNAL` with its message. */
export function asRamifyError(err: unknown): RamifyError {
  if (isRamifyError(err)) return err;
  return new RamifyError('INTERNAL', err instanceof Error ? err.message : String(err));
}

/**
 * A tool error: text `CODE: message` and `next: hint` (and `retry after N ms` when waiting may help);
 * `structuredContent.error` holds `{ code, message, details?, hint, retryAfterMs? }`.
 */
export function toolError(err: unknown): CallToolResult {
  const e = asRamifyError(err);
  const { hint, retryAfterMs } = hintFor(e);
  const error = { code: e.code, message: e.message, ...(e.details ? { details: jsonSafe(e.details) } : {}), hint, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) };
  const retry = retryAfterMs !== undefined ? ` (retry after ${retryAfterMs} ms)` : '';
  return { isError: true, content: [{ type: 'text', text: `${e.code}: ${e.message}\nnext: ${hint}${retry}` }], structuredContent: { error } };
}
