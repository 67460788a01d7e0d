/**
 * Argument schemas shared by the tools, with the descriptions a model reads in each tool's JSON Schema.
 * Names follow the SDK and E2B: `sandboxId`, `timeoutMs`, `cwd`, `envs`.
 */
import { z } from 'zod';
import { MAX_SANDBOX_TIMEOUT_MS } from '@ramify/contracts';

/** The sandbox a tool acts on. */
export const sandboxId = z.string().min(1).max(128).describe('sandbox id (sbx_...), as sandbox_create or sandbox_list return it');
/** A process id inside a sandbox. */
export const pid = z.number().int().min(1).describe('process id inside the sandbox, as command_run or command_start return it');
/** An absolute path inside a sandbox. */
export const path = z.string().min(1).max(4096).regex(/^\//, 'paths are absolute (start with /)').describe('absolute path inside the sandbox');
/** Environment variables of a command or sandbox. */
export const envs = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'environment variable names are [A-Za-z_][A-Za-z0-9_]*'), z.string().max(65536));
/** A sandbox lifetime, ms. */
export const lifetimeMs = z.number().int().min(1).max(MAX_SANDBOX_TIMEOUT_MS);
/** Each fork is a whole sandbox: the caller says it means it. */
export const confirm = z.boolean().describe('must be true: each fork is a new running sandbox with its own memory and CPU');
