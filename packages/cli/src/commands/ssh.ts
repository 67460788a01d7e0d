/**
 * `ramify ssh-key add|list|rm` and `ramify sandbox ssh-access`: credentials of the daemon's SSH gateway.
 * Connecting is plain OpenSSH: `ssh -p 2222 <sandboxId>@<host>` with a registered key, or the command
 * `ssh-access` prints (a short-lived token in the user name).
 */
import { readFile } from 'node:fs/promises';
import { MAX_SSH_TOKEN_TTL_MS, MIN_SSH_TOKEN_TTL_MS } from '@ramify/contracts/client';
import { RamifyError, Sandbox, addSshKey, listSshKeys, removeSshKey, type SshKeyInfo } from '@ramify/sdk';
import { InvalidArgumentError, type Command } from 'commander';
import { action, type CliEnv } from '../context.js';
import { parseDuration } from '../parse.js';
import { renderTable } from '../output/table.js';

export const SSH_HELP = `Connect with plain OpenSSH (the daemon's gateway listens on 127.0.0.1:2222 by default;
'ramify serve --ssh-listen ADDR:PORT'), the sandbox id as user name:
  ssh -p 2222 sbx_01...@127.0.0.1                   a shell (a terminal; resize and Ctrl-C pass through)
  ssh -p 2222 sbx_01...@127.0.0.1 'make test'       a command: its output, stdin and exit code
  scp -P 2222 file sbx_01...@127.0.0.1:/root/       files (SFTP; 'scp -O' works too); sftp -P 2222 ...
  rsync -a -e 'ssh -p 2222' dir/ sbx_01...@127.0.0.1:/root/dir/
  ssh -p 2222 -N -L 8000:localhost:8000 sbx_01...@127.0.0.1   a port of the sandbox on your machine
Credentials: a public key registered with 'ramify ssh-key add ~/.ssh/id_ed25519.pub' opens the
sandboxes of your API key's team; 'ramify sandbox ssh-access ID' prints a command with a short-lived
token for one sandbox.
A paused sandbox is resumed by the connection.`;

function keysTable(keys: SshKeyInfo[]): string {
  if (keys.length === 0) return 'no SSH keys registered (ramify ssh-key add ~/.ssh/id_ed25519.pub)';
  return renderTable(['ID', 'NAME', 'TYPE', 'FINGERPRINT', 'CREATED'], keys.map((k) => [k.id, k.name, k.type, k.fingerprint, k.createdAt]));
}

const ttlArg = (value: string): number => {
  const ms = parseDuration(value);
  if (ms < MIN_SSH_TOKEN_TTL_MS || ms > MAX_SSH_TOKEN_TTL_MS) throw new InvalidArgumentError('expected a duration from 1m to 24h');
  return ms;
};

/** Register `ssh-key` on the program. */
export function registerSshKeys(program: Command, env: CliEnv): void {
  const keys = program.command('ssh-key').description('public keys that open sandboxes over SSH').addHelpText('after', `\n${SSH_HELP}`);

  keys.command('add').argument('<file.pub>', "a public key file, e.g. ~/.ssh/id_ed25519.pub ('-' reads stdin)")
    .option('--name <name>', "a label (default the key's comment)")
    .description("register a public key: it opens your team's sandboxes over SSH, the sandbox id as user name")
    .action(action(env, async (ctx, file: string, opts: { name?: string }) => {
      const text = file === '-' ? await readStream(env.stdin) : await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') throw new RamifyError('FILE_NOT_FOUND', `local file ${file} does not exist`);
        throw err;
      });
      const key = await addSshKey(text, { ...ctx.connection, ...(opts.name !== undefined ? { name: opts.name } : {}) });
      ctx.output(key, () => `${key.id} ${key.type} ${key.fingerprint} (${key.name})`);
    }));

  keys.command('list').description("your team's registered public keys (--json: each with its id)")
    .action(action(env, async (ctx) => {
      const list = await listSshKeys(ctx.connection);
      ctx.output({ keys: list }, () => keysTable(list));
    }));

  keys.command('rm').argument('<id>', 'key id (sshk_..., from ssh-key list)').description('unregister a key: it opens nothing from then on')
    .action(action(env, async (ctx, id: string) => {
      await removeSshKey(id, ctx.connection);
      ctx.output({ id, removed: true }, () => `removed ${id}`);
    }));
}

/** Register `sandbox ssh-access` on `sandbox`. */
export function registerSshAccess(sandbox: Command, env: CliEnv): void {
  sandbox.command('ssh-access').argument('<id>', 'sandbox id')
    .option('--ttl <duration>', 'how long the token opens the sandbox, 1m to 24h (default 1h)', ttlArg)
    .description('print a ready ssh command with a short-lived token for this sandbox (--json: { host, port, user, token, command, expiresAt })')
    .addHelpText('after', `
The token travels in the user name, <sandboxId>+<token>, so plain 'ssh' needs no prompt and no key
(append options or a command to the printed line: ... 'uname -a'). It may also be given as the password
with the sandbox id as user name. Only a hash is stored; it opens this sandbox only, until it expires.
For scp and sftp use -P PORT and the same user: scp -P 2222 f <sandboxId>+<token>@host:/root/

${SSH_HELP}`)
    .action(action(env, async (ctx, id: string, opts: { ttl?: number }) => {
      const access = await Sandbox.fromId(id, ctx.connection).getSshAccess(opts.ttl !== undefined ? { ttlMs: opts.ttl } : {});
      ctx.output(access, () => access.command);
      if (!ctx.json) ctx.note(`ramify: the token opens ${id} until ${access.expiresAt}`);
    }));
}

async function readStream(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}
