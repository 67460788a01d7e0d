/** Sandbox lifecycle tools: create, list, get, kill, pause, resume, set the lifetime. */
import { z } from 'zod';
import { EgressPolicyRequest, RuntimeName, SandboxState, TimeoutAction } from '@ramify/contracts';
import { Sandbox } from '@ramify/sdk';
import { envs, lifetimeMs, sandboxId } from './args.js';
import { sandboxLine } from './format.js';
import { defineTool, READ_ONLY, type Tool } from './tool.js';

/** Most sandboxes `sandbox_list` returns in one call. */
export const MAX_LIST = 1000;

const sandboxCreate = defineTool({
  name: 'sandbox_create',
  title: 'Create a sandbox',
  description: "Start a new isolated Linux sandbox (Debian, python3, bash) from a template (default 'base') or a snapshot; returns its sandboxId for the other tools.",
  input: z.strictObject({
    template: z.string().min(1).max(128).default('base').describe("template name or id (ramify://templates lists them); ignored when snapshot is given"),
    snapshot: z.string().min(1).max(128).optional().describe('start from this snapshot (id or name) instead: its memory, processes and files'),
    runtime: RuntimeName.optional().describe("gvisor (fast, the usual default) or microvm (a full VM kernel); default the daemon's first"),
    timeoutMs: lifetimeMs.optional().describe('lifetime, ms (max 86400000); default 300000; then onTimeout happens'),
    onTimeout: TimeoutAction.optional().describe('what the lifetime deadline does: pause (default, resumable) or kill'),
    envs: envs.optional().describe('environment variables of every command in the sandbox'),
    metadata: z.record(z.string().min(1).max(256), z.string().max(8192)).optional().describe('free-form labels, filterable in sandbox_list'),
    egress: z.union([z.array(z.string()), EgressPolicyRequest]).optional()
      .describe("outbound network policy: allow rules like ['pypi.org', '*.github.com:443'] ([] = open), or { mode: 'deny-all' }; default open"),
    cpuCount: z.number().int().min(1).max(16).optional().describe('CPUs (default 1)'),
    memoryMB: z.number().int().min(128).max(65536).optional().describe('memory, MB (default 512; a gVisor sandbox keeps its file changes in it)'),
  }),
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  async run(args, ctx) {
    const { template, snapshot, ...rest } = args;
    const sbx = await Sandbox.create({ ...ctx.connection, ...rest, ...(snapshot !== undefined ? { snapshot } : { template }) });
    const info = await sbx.getInfo();
    return { text: `created ${sandboxLine(info)}\nsandboxId: ${info.id}`, data: { sandboxId: info.id, sandbox: info } };
  },
});

const sandboxList = defineTool({
  name: 'sandbox_list',
  title: 'List sandboxes',
  description: 'List sandboxes (default: every one not killed) with state, runtime, size, deadline and metadata; filter by state or metadata.',
  input: z.strictObject({
    state: z.array(SandboxState).min(1).optional().describe("only these states, e.g. ['running', 'paused']"),
    metadata: z.record(z.string(), z.string()).optional().describe('only sandboxes whose metadata has all these pairs'),
    limit: z.number().int().min(1).max(MAX_LIST).default(100).describe(`most sandboxes to return (max ${MAX_LIST})`),
  }),
  hints: READ_ONLY,
  async run(args, ctx) {
    const pages = Sandbox.list({ ...ctx.connection, ...(args.state ? { state: args.state } : {}), ...(args.metadata ? { metadata: args.metadata } : {}), limit: args.limit });
    const sandboxes = await pages.nextItems();
    const more = pages.hasNext;
    const text = sandboxes.length === 0 ? 'no sandboxes' : sandboxes.map(sandboxLine).join('\n');
    return { text: more ? `${text}\n(more exist: raise limit or filter)` : text, data: { sandboxes, more } };
  },
});

const sandboxGet = defineTool({
  name: 'sandbox_get',
  title: 'Get a sandbox',
  description: "One sandbox's state, runtime, CPU, memory, deadline, parent, exposed ports and metadata.",
  input: z.strictObject({ sandboxId }),
  hints: READ_ONLY,
  async run(args, ctx) {
    const info = await Sandbox.getInfo(args.sandboxId, ctx.connection);
    return { text: sandboxLine(info), data: { sandbox: info } };
  },
});

const sandboxKill = defineTool({
  name: 'sandbox_kill',
  title: 'Kill a sandbox',
  description: 'Kill a sandbox for good (its memory, processes and files are gone; snapshots stay); killing a killed one is fine.',
  input: z.strictObject({ sandboxId }),
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    const killed = await Sandbox.kill(args.sandboxId, ctx.connection);
    return { text: killed ? `killed ${args.sandboxId}` : `${args.sandboxId} does not exist`, data: { sandboxId: args.sandboxId, killed } };
  },
});

const sandboxPause = defineTool({
  name: 'sandbox_pause',
  title: 'Pause a sandbox',
  description: 'Checkpoint a running sandbox (memory, processes, files) and stop its lifetime clock; sandbox_resume continues it exactly where it was.',
  input: z.strictObject({ sandboxId }),
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    const info = await Sandbox.pause(args.sandboxId, ctx.connection);
    return { text: `paused ${sandboxLine(info)}`, data: { sandbox: info } };
  },
});

const sandboxResume = defineTool({
  name: 'sandbox_resume',
  title: 'Resume a sandbox',
  description: 'Resume a paused sandbox (same id, processes continue); timeoutMs restarts its lifetime clock.',
  input: z.strictObject({ sandboxId, timeoutMs: lifetimeMs.optional().describe('new lifetime from now, ms (max 86400000); default the remaining one') }),
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    const info = await Sandbox.resume(args.sandboxId, { ...ctx.connection, ...(args.timeoutMs !== undefined ? { timeoutMs: args.timeoutMs } : {}) });
    return { text: `resumed ${sandboxLine(info)}`, data: { sandbox: info } };
  },
});

const sandboxSetTimeout = defineTool({
  name: 'sandbox_set_timeout',
  title: "Set a sandbox's lifetime",
  description: "Set a sandbox's remaining lifetime to timeoutMs from now (max 24 h); at the deadline it is paused (or killed, per onTimeout).",
  input: z.strictObject({ sandboxId, timeoutMs: lifetimeMs.describe('remaining lifetime from now, ms (max 86400000)') }),
  hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    const info = await Sandbox.setTimeout(args.sandboxId, args.timeoutMs, ctx.connection);
    return { text: sandboxLine(info), data: { sandbox: info } };
  },
});

/** The sandbox lifecycle tools. */
export const sandboxTools: Tool[] = [sandboxCreate, sandboxList, sandboxGet, sandboxKill, sandboxPause, sandboxResume, sandboxSetTimeout];
