/**
 * `ramify sandbox sync <local-dir> <id>:<remote-dir>`: two-way sync (the SDK's `syncDir`). Prints each
 * change as it is carried over (`--json`: one JSON object per line) and every conflict on stderr too;
 * runs until Ctrl-C, or once with `--once`.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { RamifyError } from '@ramify/contracts/client';
import { DEFAULT_IGNORES, IGNORE_FILE, Sandbox, syncDir, type SyncChange } from '@ramify/sdk';
import { action, type CliContext, type CliEnv } from '../context.js';
import { StatusLine } from '../output/spinner.js';

const ARROWS: Record<SyncChange['kind'], string> = { pushed: '->', pulled: '<-', deletedRemote: '-x', deletedLocal: 'x-', conflict: '!!' };

/** A parsed `<id>:<remote-dir>` argument. */
export interface SyncTarget {
  id: string;
  remoteDir: string;
}

/** `sbx_1:/root/app` → the id and the remote directory. @throws InvalidArgumentError otherwise (a usage error: exit 2). */
export function parseTarget(target: string): SyncTarget {
  const colon = target.indexOf(':');
  const id = target.slice(0, colon);
  const remoteDir = target.slice(colon + 1);
  if (colon <= 0 || !remoteDir.startsWith('/')) throw new InvalidArgumentError(`expected <id>:<absolute remote dir> (e.g. sbx_01...:/root/app), got '${target}'`);
  return { id, remoteDir };
}

function describe(change: SyncChange): string {
  if (change.kind === 'conflict') return `${ARROWS.conflict} ${change.path}: changed on both sides; kept the local version, the sandbox's is now ${change.copy} (on both sides)`;
  return `${ARROWS[change.kind]} ${change.path}`;
}

interface SyncCliOpts {
  once?: boolean;
  resume?: boolean;
  ignore: string[];
}

/** The sandbox to sync with: resumed first when paused and `--resume` was given, else a paused one is refused with the hint. */
async function openSandbox(ctx: CliContext, id: string, resume: boolean): Promise<Sandbox> {
  const sbx = Sandbox.fromId(id, ctx.connection);
  const { state } = await sbx.getInfo();
  if (state !== 'paused') return sbx;
  if (!resume) throw new RamifyError('SANDBOX_PAUSED', `sandbox ${id} is paused: 'ramify sandbox sync --resume ...' resumes it and syncs (or 'ramify sandbox resume ${id}' first)`, { id, state });
  await ctx.spin(`resuming ${id}`, () => sbx.resume());
  ctx.note(`ramify: resumed ${id}`);
  return sbx;
}

async function runSync(ctx: CliContext, localDir: string, { id, remoteDir }: SyncTarget, opts: SyncCliOpts): Promise<void> {
  const sbx = await openSandbox(ctx, id, opts.resume === true);
  const counts = { pushed: 0, pulled: 0, deletedRemote: 0, deletedLocal: 0, conflict: 0 };
  const status = ctx.json ? undefined : new StatusLine('first sync: scanning both sides', ctx.env.stderr);
  let first = true;
  const started = Date.now();
  const session = await syncDir(sbx, localDir, remoteDir, {
    once: opts.once === true,
    ignore: opts.ignore,
    onProgress: (p) => {
      if (first && p.phase !== 'scan') status?.update(`first sync: ${p.phase === 'upload' ? 'uploading' : 'downloading'} ${p.done}/${p.total}`);
    },
    onChange: (change) => {
      counts[change.kind] += 1;
      if (ctx.json) ctx.print(JSON.stringify({ event: 'change', ...change }));
      else if (!first || change.kind === 'conflict') ctx.print(describe(change));
      // Piped stdout (a log file, `| tee`): the conflict is said on the terminal too; on a terminal once is enough.
      if (change.kind === 'conflict' && !ctx.json && (ctx.env.stdout as { isTTY?: boolean }).isTTY !== true) ctx.note(`conflict: ${describe(change)}`);
    },
    onError: (err) => ctx.note(`sync pass failed, retrying: ${err.message}`),
  });
  await session.ready.finally(() => status?.stop());
  first = false;
  const summary = { event: 'synced', seconds: (Date.now() - started) / 1000, ...counts };
  if (ctx.json) ctx.print(JSON.stringify(summary));
  else ctx.note(`in sync (${summary.seconds.toFixed(1)} s): ${counts.pushed} pushed, ${counts.pulled} pulled, ${counts.deletedRemote + counts.deletedLocal} deleted, ${counts.conflict} conflicts${opts.once ? '' : '; watching both sides (Ctrl-C to stop)'}`);
  if (opts.once) return;
  const stop = (): void => void session.stop();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    await session.done;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

/** Register `sync` on the `sandbox` command. */
export function registerSync(sandbox: Command, env: CliEnv): void {
  sandbox.command('sync').argument('<local-dir>', 'host directory (created when missing)').argument('<target>', '<id>:<remote-dir>, the sandbox directory (created when missing)', parseTarget)
    .description('keep a host directory and a sandbox directory in sync, both ways, until Ctrl-C')
    .option('--once', 'reconcile once and exit (a two-way copy)')
    .option('--resume', 'resume the sandbox first if it is paused (else a paused sandbox is refused)')
    .option('--ignore <glob>', `leave paths matching this gitignore-style pattern alone (repeatable; ${DEFAULT_IGNORES.slice(0, 3).join(', ')} and the patterns in <local-dir>/${IGNORE_FILE} always are)`, (v: string, all: string[]) => [...all, v], [])
    .addHelpText('after', [
      '',
      'Changes on either side are carried over within about a second, deletions included, as exact bytes;',
      'modes and symlinks are kept. Conflict (a path changed on both sides since the last sync): both',
      "versions are kept. The local version keeps the name on both sides; the sandbox's is renamed",
      'NAME.conflict (NAME.conflict.2, ... if taken) in the sandbox and copied here. A change beats a',
      'deletion. Each conflict is printed (on stderr too when stdout is not a terminal). What was last in sync is kept in',
      '<local-dir>/.ramify/sync/, so a restarted sync copies only what changed since. A sandbox that pauses',
      'while the sync runs is waited for: the sync goes on when it runs again. A sync is not started on a',
      'paused sandbox unless --resume is given.',
      '',
      'Examples:',
      '  ramify sandbox sync ./app sbx_01...:/root/app',
      "  ramify sandbox sync ./app sbx_01...:/root/app --once --ignore 'dist/' --ignore '*.log'",
    ].join('\n'))
    .action(action(env, (ctx, localDir: string, target: SyncTarget, opts: SyncCliOpts) => runSync(ctx, localDir, target, opts)));
}
