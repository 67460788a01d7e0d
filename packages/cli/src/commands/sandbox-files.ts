/** `ramify sandbox files ...`: the sandbox filesystem; `put`/`get`/`cat` stream (nothing is buffered whole). */
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { Command } from 'commander';
import { RamifyError } from '@ramify/contracts/client';
import { isRamifyError, Sandbox, type FileInfo, type Files } from '@ramify/sdk';
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

/** `12 bytes`, or `700000 bytes (684 KiB)` from 1 KiB on. */
function byteCount(bytes: number): string {
  return bytes < 1024 ? `${bytes} bytes` : `${bytes} bytes (${formatBytes(bytes)})`;
}

/** True when `path` is a directory in the sandbox (false when it does not exist). */
async function isRemoteDir(files: Files, path: string): Promise<boolean> {
  try {
    return (await files.getInfo(path)).type === 'dir';
  } catch (err) {
    if (isRamifyError(err) && (err.code === 'FILE_NOT_FOUND' || err.code === 'NOT_A_DIRECTORY')) return false;
    throw err;
  }
}

/**
 * Where `put` writes, like `cp`: a `remote` that ends with `/` or is an existing directory gets `name`
 * (the local file's name) appended. `name` is undefined for stdin, which then needs a file path.
 */
async function uploadTarget(files: Files, remote: string, name: string | undefined): Promise<string> {
  if (!remote.endsWith('/') && !(await isRemoteDir(files, remote))) return remote;
  if (name === undefined) throw new RamifyError('IS_A_DIRECTORY', `${remote} is a directory: give the file path to write stdin to`);
  return `${remote.replace(/\/+$/, '')}/${name}`;
}

/** Check that `local` is a regular host file: `FILE_NOT_FOUND` if missing, `IS_A_DIRECTORY`, or `BAD_REQUEST` (other kinds). */
async function requireLocalFile(local: string): Promise<void> {
  const info = await stat(local).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') throw new RamifyError('FILE_NOT_FOUND', `local file ${local} does not exist`);
    throw err;
  });
  if (info.isDirectory()) throw new RamifyError('IS_A_DIRECTORY', `local file ${local} is a directory`);
  if (!info.isFile()) throw new RamifyError('BAD_REQUEST', `local file ${local} is not a regular file`);
}

/** Where `get` writes, like `cp`: `[local]` (default: the remote's name here); a directory gets the remote's name inside it. */
async function downloadTarget(remote: string, local: string | undefined): Promise<string> {
  const name = basename(remote);
  if (local === undefined) return name;
  if (local === '-') return local;
  const dirLike = local.endsWith('/') || (await stat(local).then((s) => s.isDirectory(), () => false));
  return dirLike ? join(local, name) : local;
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

  files.command('get').argument('<id>', 'sandbox id').argument('<remote>', 'file in the sandbox')
    .argument('[local]', 'host file or directory; - for stdout (default: ./<remote file name>)')
    .description('download a file (streamed); without [local] it is written to the current directory under its own name, like cp')
    .addHelpText('after', '\nExamples:\n  ramify sandbox files get sbx_1 /root/out.txt          # writes ./out.txt\n  ramify sandbox files get sbx_1 /root/out.txt data/    # writes data/out.txt\n  ramify sandbox files get sbx_1 /root/out.txt -        # writes to stdout')
    .action(action(env, async (ctx, id: string, remote: string, local?: string) => {
      const target = await downloadTarget(remote, local);
      if (target === '-') return download(ctx, id, remote, () => ctx.env.stdout);
      try {
        await download(ctx, id, remote, () => createWriteStream(target));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new RamifyError('FILE_NOT_FOUND', `local directory ${dirname(target)} does not exist`);
        throw err;
      }
      const size = (await stat(target)).size;
      ctx.output({ remote, local: target, size }, () => `downloaded ${byteCount(size)} to ${target}`);
    }));

  files.command('put').argument('<id>', 'sandbox id').argument('<local>', 'host file; - for stdin')
    .argument('<remote>', 'destination path in the sandbox; a directory (existing, or ending with /) gets the local file name, like cp')
    .description('upload a file (streamed; parent directories are created)')
    .addHelpText('after', '\nExamples:\n  ramify sandbox files put sbx_1 app.py /root/          # writes /root/app.py\n  ramify sandbox files put sbx_1 app.py /srv/main.py    # writes /srv/main.py\n  echo hi | ramify sandbox files put sbx_1 - /tmp/hi.txt')
    .action(action(env, async (ctx, id: string, local: string, remote: string) => {
      const stdin = local === '-';
      if (!stdin) await requireLocalFile(local);
      const files = Sandbox.fromId(id, ctx.connection).files;
      const target = await uploadTarget(files, remote, stdin ? undefined : basename(local));
      const source = stdin ? ctx.env.stdin : createReadStream(local);
      const { counter, done } = progress(ctx, 'uploading', stdin ? 'stdin' : local);
      try {
        (source as Readable).on('error', (err) => counter.destroy(err));
        const info = await files.write(target, (source as Readable).pipe(counter));
        ctx.output(info, () => `uploaded ${byteCount(info.size)} to ${info.path}`);
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

  files.command('watch').argument('<id>', 'sandbox id').argument('<path>', 'directory to watch')
    .description('print changes under a directory as they happen, until Ctrl-C (create, write, remove, rename, chmod)')
    .option('-r, --recursive', 'watch subdirectories too')
    .addHelpText('after', '\nOne line per event: TYPE NAME (a directory ends with /); --json: one JSON object per line. A rename is\nits old name, then a create of the new one. The watch survives pause/resume; a line "overflow REASON"\nmarks where events may be missing. Errors: FILE_NOT_FOUND, NOT_A_DIRECTORY, WATCH_UNAVAILABLE.')
    .action(action(env, async (ctx, id: string, path: string, opts: { recursive?: boolean }) => {
      let finished!: (err?: Error) => void;
      const done = new Promise<void>((resolve, reject) => (finished = (err) => (err ? reject(err) : resolve())));
      const handle = await Sandbox.fromId(id, ctx.connection).files.watchDir(path, (e) => ctx.print(ctx.json ? JSON.stringify(e) : `${e.type} ${e.name}${e.isDir ? '/' : ''}`), {
        recursive: opts.recursive === true,
        onOverflow: (o) => ctx.print(ctx.json ? JSON.stringify({ type: 'overflow', ...o }) : `overflow ${o.reason}`),
        onExit: (err) => finished(err),
      });
      const stop = (): void => void handle.stop();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await done.finally(() => (process.off('SIGINT', stop), process.off('SIGTERM', stop)));
    }));

  files.command('mv').argument('<id>', 'sandbox id').argument('<from>', 'source path').argument('<to>', 'destination path').description('move or rename')
    .action(action(env, async (ctx, id: string, from: string, to: string) => {
      const info = await Sandbox.fromId(id, ctx.connection).files.rename(from, to);
      ctx.output(info, () => '');
    }));
}
