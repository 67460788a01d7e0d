/** `ramify sandbox files ...`: the sandbox filesystem; `put`/`get`/`cat` stream (nothing is buffered whole). */
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Command } from 'commander';
import { Sandbox, type FileInfo } from '@ramify/sdk';
import { action, type CliContext, type CliEnv } from '../context.js';
import { intIn } from '../parse.js';
import { renderTable } from '../output/table.js';
import { formatBytes } from '../output/format.js';
import { StatusLine } from '../output/spinner.js';

function modeString(info: FileInfo): string {
  const t = info.type === 'dir' ? 'd' : info.type === 'symlink' ? 'l' : info.type === 'file' ? '-' : '?';
  const bits = 'rwxrwxrwx'.split('').map((c, i) => ((info.mode >> (8 - i)) & 1 ? c : '-')).join('');
  return t + bits;
}

/** A pass-through that reports the bytes seen so far on a status line (TTY only). */
function progress(ctx: CliContext, verb: string, name: string): { counter: Transform; done: () => void } {
  let bytes = 0;
  const status = ctx.json ? undefined : new StatusLine(`${verb} ${name}`, ctx.env.stderr);
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      bytes += chunk.length;
      status?.update(`${verb} ${name} ${formatBytes(bytes)}`);
      cb(null, chunk);
    },
  });
  return { counter, done: () => status?.stop() };
}

/** Stream a sandbox file into the stream `open()` returns (opened only once the download has started). */
async function download(ctx: CliContext, id: string, remote: string, open: () => NodeJS.WritableStream): Promise<void> {
  const stream = await Sandbox.fromId(id, ctx.connection).files.read(remote, { format: 'stream' });
  const target = open();
  const { counter, done } = progress(ctx, 'downloading', remote);
  try {
    await pipeline(Readable.fromWeb(stream as unknown as WebReadableStream<Uint8Array>), counter, target, { end: target !== ctx.env.stdout });
  } finally {
    done();
  }
}

/** Register `files` on the `sandbox` command. */
export function registerFiles(sandbox: Command, env: CliEnv): void {
  const files = sandbox.command('files').alias('fs').description('read and write files in a sandbox');

  files.command('ls').argument('<id>', 'sandbox id').argument('[path]', 'directory', '/root').description('list a directory')
    .option('-d, --depth <n>', 'descend this many levels (1-16)', intIn(1, 16), 1)
    .action(action(env, async (ctx, id: string, path: string, opts: { depth: number }) => {
      const entries = await ctx.spin(`listing ${path}`, () => Sandbox.fromId(id, ctx.connection).files.list(path, { depth: opts.depth }));
      ctx.output(entries, () => (entries.length === 0 ? '(empty)' : renderTable(['MODE', 'SIZE', 'MODIFIED', 'PATH'], entries.map((e) => [
        modeString(e), e.type === 'dir' ? '-' : formatBytes(e.size), new Date(e.mtimeMs).toISOString().replace(/\.\d+Z$/, 'Z'),
        opts.depth > 1 ? e.path : e.name + (e.type === 'dir' ? '/' : ''),
      ]))));
    }));

  files.command('cat').argument('<id>', 'sandbox id').argument('<path>', 'file').description('write a file to stdout (raw bytes)')
    .action(action(env, async (ctx, id: string, path: string) => {
      await download(ctx, id, path, () => ctx.env.stdout);
    }));

  files.command('get').argument('<id>', 'sandbox id').argument('<remote>', 'file in the sandbox').argument('[local]', 'host file; - for stdout (default: the remote name in the current directory)')
    .description('download a file (streamed)')
    .action(action(env, async (ctx, id: string, remote: string, local?: string) => {
      const target = local ?? basename(remote);
      if (target === '-') return download(ctx, id, remote, () => ctx.env.stdout);
      await download(ctx, id, remote, () => createWriteStream(target));
      const size = (await stat(target)).size;
      ctx.output({ remote, local: target, size }, () => '');
    }));

  files.command('put').argument('<id>', 'sandbox id').argument('<local>', 'host file; - for stdin').argument('<remote>', 'destination path in the sandbox')
    .description('upload a file (streamed; parent directories are created)')
    .action(action(env, async (ctx, id: string, local: string, remote: string) => {
      if (local !== '-' && !(await stat(local)).isFile()) throw Object.assign(new Error(`'${local}' is not a regular file`), { code: 'BAD_REQUEST' });
      const source = local === '-' ? ctx.env.stdin : createReadStream(local);
      const { counter, done } = progress(ctx, 'uploading', local === '-' ? 'stdin' : local);
      try {
        (source as Readable).on('error', (err) => counter.destroy(err));
        const info = await Sandbox.fromId(id, ctx.connection).files.write(remote, (source as Readable).pipe(counter));
        ctx.output(info, () => '');
      } finally {
        done();
      }
    }));

  files.command('rm').argument('<id>', 'sandbox id').argument('<path>', 'file or directory (recursive)').description('remove a file or directory tree')
    .action(action(env, async (ctx, id: string, path: string) => {
      await Sandbox.fromId(id, ctx.connection).files.remove(path);
      ctx.output({ removed: path }, () => '');
    }));

  files.command('mkdir').argument('<id>', 'sandbox id').argument('<path>', 'directory').description('create a directory and its parents')
    .action(action(env, async (ctx, id: string, path: string) => {
      const created = await Sandbox.fromId(id, ctx.connection).files.makeDir(path);
      if (!created && !ctx.json) ctx.note(`${path} already exists`);
      ctx.output({ path, created }, () => '');
    }));

  files.command('mv').argument('<id>', 'sandbox id').argument('<from>', 'source path').argument('<to>', 'destination path').description('move or rename')
    .action(action(env, async (ctx, id: string, from: string, to: string) => {
      const info = await Sandbox.fromId(id, ctx.connection).files.rename(from, to);
      ctx.output(info, () => '');
    }));
}
