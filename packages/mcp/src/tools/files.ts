/**
 * File tools: read (UTF-8 text, or base64 for anything else, from an offset, at most `maxBytes`), write
 * (text or base64), list, remove. Sizes are bytes; the limits are in each tool's schema.
 */
import { z } from 'zod';
import { RamifyError, type FileInfo } from '@ramify/sdk';
import { wholeChars } from '../cut.js';
import { path, sandboxId } from './args.js';
import { defineTool, invalidArgument, type Tool } from './tool.js';

/** Default and largest `maxBytes` of `files_read`. */
export const DEFAULT_READ_BYTES = 256 * 1024;
export const MAX_READ_BYTES = 4 * 1024 * 1024;
/** Longest `content` of `files_write`, characters (text, or base64: 6 MiB of bytes). */
export const MAX_WRITE_CHARS = 8 * 1024 * 1024;
/** Most entries `files_list` returns. */
export const MAX_LIST_ENTRIES = 2000;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** `bytes` as UTF-8 text, or undefined when they are not text (invalid UTF-8, or NUL bytes). */
function asText(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined;
  try { return strictUtf8.decode(bytes); } catch { return undefined; }
}

/** Bytes `offset` to `offset + max` of a stream (the rest is cancelled unread). */
async function readRange(stream: ReadableStream<Uint8Array>, offset: number, max: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let pos = 0;
  let taken = 0;
  const reader = stream.getReader();
  try {
    while (taken < max) {
      const { done, value } = await reader.read();
      if (done) break;
      const start = Math.max(0, offset - pos);
      pos += value.byteLength;
      if (start >= value.byteLength) continue;
      const part = value.subarray(start, start + max - taken);
      parts.push(Buffer.from(part));
      taken += part.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(parts);
}

const filesRead = defineTool({
  name: 'files_read',
  title: 'Read a file',
  description: `Read a file in a sandbox: UTF-8 text as text, anything else as base64; at most maxBytes (default ${DEFAULT_READ_BYTES}, max ${MAX_READ_BYTES}) from offset.`,
  input: z.strictObject({
    sandboxId,
    path,
    encoding: z.enum(['auto', 'text', 'base64']).default('auto').describe("auto (default): text when the bytes are UTF-8, else base64; text: fail with NOT_UTF8 unless they are; base64: always"),
    offset: z.number().int().min(0).default(0).describe('byte offset to start at (nextOffset of the previous read)'),
    maxBytes: z.number().int().min(1).max(MAX_READ_BYTES).default(DEFAULT_READ_BYTES).describe(`most bytes to return (default ${DEFAULT_READ_BYTES}, max ${MAX_READ_BYTES})`),
  }),
  hints: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    const files = ctx.sandbox(args.sandboxId).files;
    const info = await files.getInfo(args.path);
    if (info.type === 'dir') throw new RamifyError('IS_A_DIRECTORY', `${args.path} is a directory`, { path: args.path });
    let bytes = await readRange(await files.read(args.path, { format: 'stream' }), args.offset, args.maxBytes);
    let text: string | undefined;
    if (args.encoding !== 'base64') {
      // A read that stops inside a character ends before it (the next read starts there).
      const whole = args.offset + bytes.byteLength < info.size ? wholeChars(bytes) : bytes;
      text = asText(whole);
      if (text !== undefined) bytes = whole;
    }
    if (args.encoding === 'text' && text === undefined) {
      throw new RamifyError('NOT_UTF8', `${args.path} is not UTF-8 text (bytes ${args.offset}-${args.offset + bytes.byteLength} of ${info.size})`, { path: args.path });
    }
    const encoding = text === undefined ? 'base64' : 'text';
    const content = text ?? bytes.toString('base64');
    const nextOffset = args.offset + bytes.byteLength;
    const truncated = nextOffset < info.size;
    const head = `${args.path}: ${info.size} bytes; bytes ${args.offset}-${nextOffset} as ${encoding}${truncated ? ` (more: read on with offset ${nextOffset})` : ''}`;
    return {
      text: `${head}\n${content}`,
      data: { path: args.path, size: info.size, offset: args.offset, bytesRead: bytes.byteLength, nextOffset, truncated, encoding, content },
    };
  },
});

const filesWrite = defineTool({
  name: 'files_write',
  title: 'Write a file',
  description: `Write (create or replace atomically) a file in a sandbox from text or base64 (at most ${MAX_WRITE_CHARS} characters); parent directories are created.`,
  input: z.strictObject({
    sandboxId,
    path,
    content: z.string().max(MAX_WRITE_CHARS).describe(`the file's content: text (written as UTF-8) or base64 per encoding; at most ${MAX_WRITE_CHARS} characters`),
    encoding: z.enum(['text', 'base64']).default('text').describe('text (default) or base64 (for binary files)'),
  }),
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    let data: string | Uint8Array = args.content;
    if (args.encoding === 'base64') {
      const compact = args.content.replace(/\s+/g, '');
      if (compact.length % 4 !== 0 || !BASE64.test(compact)) throw invalidArgument('content', 'content is not valid base64 (A-Z a-z 0-9 + /, = padding, length a multiple of 4)');
      data = Buffer.from(compact, 'base64');
    }
    const info = await ctx.sandbox(args.sandboxId).files.write(args.path, data);
    return { text: `wrote ${info.size} bytes to ${info.path}`, data: { path: info.path, size: info.size } };
  },
});

const entryLine = (e: FileInfo): string => `${e.type === 'dir' ? 'd' : e.type === 'symlink' ? 'l' : '-'} ${String(e.size).padStart(10)} ${e.path}${e.type === 'dir' ? '/' : ''}`;

const filesList = defineTool({
  name: 'files_list',
  title: 'List a directory',
  description: `List a directory in a sandbox (type, size, path of each entry); depth > 1 descends (max 16); at most ${MAX_LIST_ENTRIES} entries.`,
  input: z.strictObject({ sandboxId, path, depth: z.number().int().min(1).max(16).default(1).describe('levels to descend (1: this directory only)') }),
  hints: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    const all = await ctx.sandbox(args.sandboxId).files.list(args.path, { depth: args.depth });
    const entries = all.slice(0, MAX_LIST_ENTRIES);
    const truncated = all.length > entries.length;
    const text = entries.length === 0 ? `${args.path} is empty` : entries.map(entryLine).join('\n');
    return { text: truncated ? `${text}\n[ramify: ${all.length - entries.length} more entries not shown; list a subdirectory]` : text, data: { path: args.path, entries, truncated, total: all.length } };
  },
});

const filesRemove = defineTool({
  name: 'files_remove',
  title: 'Remove a file',
  description: 'Remove a file or a whole directory tree in a sandbox.',
  input: z.strictObject({ sandboxId, path }),
  hints: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  async run(args, ctx) {
    await ctx.sandbox(args.sandboxId).files.remove(args.path);
    return { text: `removed ${args.path}`, data: { path: args.path, removed: true } };
  },
});

/** The file tools. */
export const fileTools: Tool[] = [filesRead, filesWrite, filesList, filesRemove];
