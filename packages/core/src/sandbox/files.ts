/**
 * Use-cases: files of a running sandbox (pass-throughs to its agent). Contents are streamed both ways.
 */
import type { FileAttributes, FileInfo } from '@ramify/contracts';
import type { Core } from '../context.js';
import { agentFor } from './agent-access.js';

/**
 * The file's bytes as a stream. The first chunk is read before this resolves, so a missing file rejects
 * here (`FILE_NOT_FOUND`, `IS_A_DIRECTORY`) rather than in the middle of a response.
 */
export async function readFile(core: Core, sandboxId: string, path: string): Promise<AsyncIterable<Uint8Array>> {
  const iterator = (await agentFor(core, sandboxId)).readFile(path)[Symbol.asyncIterator]();
  const first = await iterator.next();
  return {
    [Symbol.asyncIterator]: () => {
      let pending: IteratorResult<Uint8Array> | undefined = first;
      return {
        next: async () => {
          if (pending) {
            const result = pending;
            pending = undefined;
            return result;
          }
          return iterator.next();
        },
        return: async () => {
          await iterator.return?.();
          return { done: true, value: undefined };
        },
      };
    },
  };
}

/** Write a file from a byte stream (parents created, replaced atomically). */
export async function writeFile(core: Core, sandboxId: string, path: string, data: AsyncIterable<Uint8Array>, options?: { mode?: number }): Promise<FileInfo> {
  return (await agentFor(core, sandboxId)).writeFile(path, data, options);
}

export async function listDir(core: Core, sandboxId: string, path: string, depth?: number): Promise<FileInfo[]> {
  return (await agentFor(core, sandboxId)).listDir(path, depth);
}

export async function statPath(core: Core, sandboxId: string, path: string): Promise<FileInfo> {
  return (await agentFor(core, sandboxId)).stat(path);
}

export async function makeDir(core: Core, sandboxId: string, path: string): Promise<FileInfo> {
  return (await agentFor(core, sandboxId)).mkdir(path);
}

/** Recursive. */
export async function removePath(core: Core, sandboxId: string, path: string): Promise<void> {
  await (await agentFor(core, sandboxId)).remove(path);
}

export async function renamePath(core: Core, sandboxId: string, from: string, to: string): Promise<FileInfo> {
  return (await agentFor(core, sandboxId)).rename(from, to);
}

/**
 * Change a path's permission bits, times or size (what `attributes` gives; symlinks followed).
 * @throws RamifyError `FILE_NOT_FOUND`, `FORBIDDEN`, `BAD_REQUEST` (also from agents older than the call).
 */
export async function setFileAttributes(core: Core, sandboxId: string, path: string, attributes: FileAttributes): Promise<FileInfo> {
  return (await agentFor(core, sandboxId)).setAttributes(path, attributes);
}

/** The target of a symlink, as stored. @throws RamifyError `FILE_NOT_FOUND`, `BAD_REQUEST` (not a symlink). */
export async function readLink(core: Core, sandboxId: string, path: string): Promise<string> {
  return (await agentFor(core, sandboxId)).readLink(path);
}

/** Make a symlink at `path` to `target`. @throws RamifyError `FILE_EXISTS`, `FILE_NOT_FOUND` (no parent). */
export async function makeSymlink(core: Core, sandboxId: string, target: string, path: string): Promise<FileInfo> {
  return (await agentFor(core, sandboxId)).symlink(target, path);
}
