/**
 * Small helpers shared by the conformance cases: polling, shell output, host files of random bytes and
 * their SHA-256 (streamed, never held whole in memory), and assertions on Ramify error codes.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import type { ErrorCode } from '@ramify/contracts';
import { isRamifyError, type CommandStartOpts, type RamifyError, type Sandbox } from '@ramify/sdk';

/** Resolve after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Options of {@link waitFor}. */
export interface WaitForOpts {
  /** Give up after this long, ms (a generous bound, never a timing assertion). */
  timeoutMs: number;
  /** Between attempts, ms; default 200. */
  intervalMs?: number;
  /** What is awaited, for the error message. */
  what: string;
}

/**
 * Poll `probe` until it returns a value other than `undefined`/`false` and return that value.
 * Errors thrown by `probe` count as "not yet". Throws with the last error/value after `timeoutMs`.
 */
export async function waitFor<T>(probe: () => Promise<T | undefined | false>, opts: WaitForOpts): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() >= deadline) {
      const detail = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${opts.what} (last: ${detail})`);
    }
    await sleep(opts.intervalMs ?? 200);
  }
}

/** Run `cmd` in the foreground and return its stdout (throws `CommandExitError` on a non-zero exit). */
export async function sh(sbx: Sandbox, cmd: string, opts: Omit<CommandStartOpts, 'background'> = {}): Promise<string> {
  return (await sbx.commands.run(cmd, opts)).stdout;
}

/** Write `bytes` random bytes to a host file, 1 MiB at a time; resolves with the file's SHA-256 (hex). */
export async function writeRandomFile(path: string, bytes: number): Promise<string> {
  const hash = createHash('sha256');
  const out = createWriteStream(path);
  for (let left = bytes; left > 0; ) {
    const chunk = randomBytes(Math.min(left, 1 << 20));
    hash.update(chunk);
    left -= chunk.byteLength;
    if (!out.write(chunk)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return hash.digest('hex');
}

/** SHA-256 (hex) of a host file, or of its first `limitBytes` bytes. Streamed. */
export async function sha256File(path: string, limitBytes?: number): Promise<string> {
  const hash = createHash('sha256');
  const stream = createReadStream(path, limitBytes === undefined ? {} : { start: 0, end: limitBytes - 1 });
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Drain a web stream to a host file, hashing it on the way; resolves with `{ sha256, bytes }`. */
export async function streamToFile(stream: ReadableStream<Uint8Array>, path: string): Promise<{ sha256: string; bytes: number }> {
  const hash = createHash('sha256');
  const out = createWriteStream(path);
  let bytes = 0;
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
    hash.update(chunk);
    bytes += chunk.byteLength;
    if (!out.write(chunk)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return { sha256: hash.digest('hex'), bytes };
}

/** SHA-256 (hex) of in-memory chunks. */
export function sha256Chunks(chunks: readonly Uint8Array[]): string {
  const hash = createHash('sha256');
  for (const c of chunks) hash.update(c);
  return hash.digest('hex');
}

/** Assert that `promise` rejects with a Ramify error of `code`; returns the error for further checks. */
export async function rejectsWithCode(promise: Promise<unknown>, code: ErrorCode): Promise<RamifyError> {
  let caught: unknown;
  try {
    await promise;
  } catch (err) {
    caught = err;
  }
  assert.ok(caught !== undefined, `expected a ${code} error, but the call succeeded`);
  assert.ok(isRamifyError(caught), `expected a RamifyError ${code}, got ${caught instanceof Error ? caught.stack : String(caught)}`);
  assert.equal(caught.code, code, `expected ${code}, got ${caught.code}: ${caught.message}`);
  return caught;
}

/** The `sha256sum` of a file inside the sandbox (hex). */
export async function sandboxSha256(sbx: Sandbox, path: string): Promise<string> {
  const out = await sh(sbx, `sha256sum -- ${shellQuote(path)}`);
  return out.trim().split(/\s+/)[0] ?? '';
}

/** Quote one argument for bash inside the sandbox. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
