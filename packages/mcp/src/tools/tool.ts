/**
 * What one MCP tool is: a name, a one-line description a model can act on, a strict zod schema for its
 * arguments (unknown fields are refused, naming them), the MCP annotations, and `run`, which calls the
 * daemon through `@ramify/sdk` only. A tool returns {@link ToolOutput} (text for the model, data for
 * `structuredContent`) or throws; register.ts turns a throw into a tool error (`isError`) with Ramify's
 * code and a hint. A new group of tools is one file exporting a `Tool[]`, listed in tools/index.ts.
 */
import type { z } from 'zod';
import { RamifyError, type ConnectionOpts, type Sandbox } from '@ramify/sdk';

/**
 * A `VALIDATION_FAILED` for argument `field` that a tool's `run` checks by hand, in the layout of a bad
 * argument the schema refuses (register.ts): `details.field`, and `details.issues` `[{ path: 'arguments.<field>', message }]`.
 */
export function invalidArgument(field: string, message: string): RamifyError {
  return new RamifyError('VALIDATION_FAILED', message, { field, issues: [{ path: `arguments.${field}`, message }] });
}

/** MCP tool annotations, all four stated for every tool (clients treat an absent hint as the unsafe default). */
export interface ToolHints {
  /** The tool changes nothing. */
  readOnlyHint: boolean;
  /** The tool may delete or overwrite something (kill, remove, replace a policy). */
  destructiveHint: boolean;
  /** Calling it again with the same arguments has no further effect. */
  idempotentHint: boolean;
  /** The tool reaches things outside Ramify (only commands run in a sandbox can: true for those). */
  openWorldHint: boolean;
}

/** A tool's result: `text` is what the model reads (content), `data` the same as JSON (`structuredContent`). */
export interface ToolOutput {
  text: string;
  data: Record<string, unknown>;
}

/** What `run` gets besides its arguments. */
export interface ToolContext {
  /** SDK connection options of this call: the server's, plus the header naming the tool (for the audit log). */
  connection: ConnectionOpts;
  /** A handle to sandbox `id` on that connection (no API call until one is made). */
  sandbox(id: string): Sandbox;
}

/** One tool. `input` is a strict zod object; `run` gets its parsed value. */
export interface Tool<S extends z.ZodObject = z.ZodObject> {
  /** `snake_case`, `<noun>_<verb>`: `sandbox_create`, `command_run`. */
  name: string;
  /** Short human title (clients show it). */
  title: string;
  /** One line: what it does and what to pass, for a model. */
  description: string;
  input: S;
  hints: ToolHints;
  run(args: z.output<S>, ctx: ToolContext): Promise<ToolOutput>;
}

/** Keeps `run`'s argument type tied to `input` while tools of any shape share one list. */
export function defineTool<S extends z.ZodObject>(tool: Tool<S>): Tool {
  return tool as unknown as Tool;
}

/** Hints of a tool that only reads. */
export const READ_ONLY: ToolHints = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
