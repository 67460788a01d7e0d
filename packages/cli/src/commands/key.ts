/**
 * `ramify key create|list|revoke`: API keys (docs/design/TEAMS.md). Admin keys manage keys (their own
 * team's; the default team's admin keys: any team's); a new key's secret is printed once, and the daemon
 * keeps only its hash.
 */
import { MAX_API_KEY_TTL_MS, MIN_API_KEY_TTL_MS } from '@ramify/contracts/client';
import { createApiKey, listApiKeys, revokeApiKey, type ApiKeyInfo } from '@ramify/sdk';
import { InvalidArgumentError, type Command } from 'commander';
import { action, type CliEnv } from '../context.js';
import { oneOf, parseDuration } from '../parse.js';
import { renderTable } from '../output/table.js';
import { formatRelative } from '../output/format.js';
import { TEAMS_HELP } from './team.js';

const ttlArg = (value: string): number => {
  const ms = parseDuration(value);
  if (ms < MIN_API_KEY_TTL_MS || ms > MAX_API_KEY_TTL_MS) throw new InvalidArgumentError('expected a duration from 1m to 3650d');
  return ms;
};

const when = (iso: string | null): string => (iso === null ? '-' : formatRelative(iso));

/** `active`, or `expired 3d ago` / `revoked 2h ago`. */
const statusText = (k: ApiKeyInfo): string =>
  k.status === 'revoked' ? `revoked ${when(k.revokedAt)}` : k.status === 'expired' ? `expired ${when(k.expiresAt)}` : 'active';

function keysTable(keys: ApiKeyInfo[]): string {
  if (keys.length === 0) return 'no API keys';
  return renderTable(['ID', 'PREFIX', 'TEAM', 'ROLE', 'NAME', 'STATUS', 'CREATED', 'LAST USED', 'EXPIRES'],
    keys.map((k) => [k.id, k.prefix, k.team, k.role, k.name, statusText(k), when(k.createdAt), when(k.lastUsedAt), k.expiresAt ?? 'never']));
}

/** Register `key` on the program. */
export function registerKeys(program: Command, env: CliEnv): void {
  const key = program.command('key').description('API keys: each belongs to one team and has a role').addHelpText('after', `\n${TEAMS_HELP}`);

  key.command('create')
    .option('--team <id>', "the key's team (default the calling key's; another team: only with an admin key of the default team)")
    .option('--role <role>', 'member (use sandboxes; the default) or admin (also manage keys)', oneOf(['admin', 'member'] as const))
    .option('--expires <duration>', 'lifetime, e.g. 30d or 12h (1m to 3650d; default: until revoked)', ttlArg)
    .option('--name <name>', 'a label (default the role)')
    .description('make an API key (an admin key); the secret is printed once (--json: { id, key, team, role, expiresAt })')
    .addHelpText('after', `
The secret goes to stdout, alone on its line, and is never shown again (the daemon keeps a hash):
  export RAMIFY_API_KEY=$(ramify key create --team acme)
  ramify key create --team acme --role admin --expires 30d --json`)
    .action(action(env, async (ctx, opts: { team?: string; role?: 'admin' | 'member'; expires?: number; name?: string }) => {
      const made = await createApiKey({
        ...ctx.connection,
        ...(opts.team !== undefined ? { team: opts.team } : {}),
        ...(opts.role !== undefined ? { role: opts.role } : {}),
        ...(opts.expires !== undefined ? { ttlMs: opts.expires } : {}),
        ...(opts.name !== undefined ? { name: opts.name } : {}),
      });
      ctx.output({ id: made.id, key: made.key, team: made.team, role: made.role, expiresAt: made.expiresAt }, () => made.key);
      if (!ctx.json) ctx.note(`ramify: ${made.id}, ${made.role} of team ${made.team}, ${made.expiresAt === null ? 'until revoked' : `expires ${made.expiresAt}`}; the secret is shown only now`);
    }));

  key.command('list').alias('ls').option('--team <id>', "only this team's keys (the default team's admin keys see every team)")
    .description('API keys the calling admin key manages: prefix, team, role, status (active, expired, revoked), created, last used, expires (--json: every field)')
    .action(action(env, async (ctx, opts: { team?: string }) => {
      const keys = await listApiKeys({ ...ctx.connection, ...(opts.team !== undefined ? { team: opts.team } : {}) });
      ctx.output({ keys }, () => keysTable(keys));
    }));

  key.command('revoke').argument('<id>', 'key id (key_..., from key list)').description('revoke a key: every request with it is refused (401) from now on')
    .action(action(env, async (ctx, id: string) => {
      await revokeApiKey(id, ctx.connection);
      ctx.output({ id, revoked: true }, () => `revoked ${id}`);
    }));
}
