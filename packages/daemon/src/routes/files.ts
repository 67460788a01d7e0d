/**
 * File routes: streamed download and upload (never buffered whole), list, stat, mkdir, remove, rename.
 */
import { Readable } from 'node:stream';
import { FileInfo, ListFilesQuery, MkdirRequest, PathQuery, RamifyError, RemoveRequest, RenameRequest } from '@ramify/contracts';
import { listDir, makeDir, readFile, removePath, renamePath, statPath, stopWatch, writeFile } from '@ramify/core';
import { z } from 'zod';
import { IdParams, route, type RouteSpec } from '../http/route.js';
import { isStream } from './processes.js';

export const fileRoutes: RouteSpec[] = [
  route({
    operation: 'readFile', summary: "Download a file's bytes (streamed)", params: IdParams, query: PathQuery, response: 'raw',
    handler: async ({ core, params, query, reply }) => {
      const content = await readFile(core, params.id, query.path);
      return reply.type('application/octet-stream').send(Readable.from(content, { objectMode: false }));
    },
  }),
  route({
    operation: 'writeFile', summary: 'Upload a file (raw bytes, streamed; parents created; replaced atomically)',
    params: IdParams, query: PathQuery, body: 'raw', response: FileInfo,
    handler: async ({ core, params, query, body }) => {
      if (!isStream(body)) throw new RamifyError('BAD_REQUEST', 'send file contents as raw bytes with Content-Type: application/octet-stream');
      return writeFile(core, params.id, query.path, body as AsyncIterable<Uint8Array>);
    },
  }),
  route({
    operation: 'listFiles', summary: 'List a directory', params: IdParams, query: ListFilesQuery, response: z.object({ entries: z.array(FileInfo) }),
    handler: async ({ core, params, query }) => ({ entries: await listDir(core, params.id, query.path, query.depth) }),
  }),
  route({
    operation: 'statFile', summary: 'Stat a path', params: IdParams, query: PathQuery, response: FileInfo,
    handler: async ({ core, params, query }) => statPath(core, params.id, query.path),
  }),
  route({
    operation: 'makeDir', summary: 'Make a directory (and its parents)',
    params: IdParams, body: MkdirRequest, response: FileInfo,
    handler: async ({ core, params, body }) => makeDir(core, params.id, body.path),
  }),
  route({
    operation: 'removeFile', summary: 'Remove a path (recursive)', params: IdParams, body: RemoveRequest, status: 204,
    handler: async ({ core, params, body }) => removePath(core, params.id, body.path),
  }),
  route({
    operation: 'renameFile', summary: 'Rename a path', params: IdParams, body: RenameRequest, response: FileInfo,
    handler: async ({ core, params, body }) => renamePath(core, params.id, body.from, body.to),
  }),
  route({
    operation: 'stopWatch', summary: 'Stop a watch (its streams get {type:"end", reason:"stopped"})',
    params: IdParams.extend({ watchId: z.string().min(1).max(64) }), status: 204,
    handler: async ({ core, params }) => stopWatch(core, params.id, params.watchId),
  }),
];
