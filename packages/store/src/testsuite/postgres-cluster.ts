/**
 * A throwaway Postgres cluster for tests: `initdb` into a temporary directory and `pg_ctl start` on a free
 * loopback port (as the `postgres` user when run as root: Postgres refuses to run as root), trust
 * authentication, no fsync. Needs no system service and leaves nothing behind: `stop()` (or the process's
 * exit) stops the server and deletes the directory. Debian's `postgresql-15` provides the binaries.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { after } from 'node:test';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface PostgresCluster {
  /** The server's major version and port, e.g. `Postgres 15 on 127.0.0.1:41234`. */
  name: string;
  /** URL of database `database` (the superuser `postgres`, no password). */
  url(database: string): string;
  /** Create the database (no-op when it exists), as a copy of `template` when given (it must have no connections); returns its URL. */
  ensureDatabase(database: string, template?: string): Promise<string>;
  /** Stop the server (immediately) and delete its directory. */
  stop(): void;
}

/** Where Debian puts each major version's server binaries; the newest found is used (RAMIFY_PG_BIN overrides). */
function findBinDir(): string | null {
  if (process.env.RAMIFY_PG_BIN) return existsSync(join(process.env.RAMIFY_PG_BIN, 'initdb')) ? process.env.RAMIFY_PG_BIN : null;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))).sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface PostgresClusterOptions {
  /**
   * `durable`: fsync and synchronous commits on, as a production server (benchmarks). Default `fast`:
   * fsync off (tests: nothing outlives the cluster).
   */
  durability?: 'fast' | 'durable';
  /**
   * Addresses the server listens on; the first is the host of {@link PostgresCluster.url}. Default
   * `['127.0.0.1']`. A multi-host test adds the address its host namespaces reach (a bridge's).
   */
  listenAddresses?: string[];
  /** Networks (CIDR) allowed to connect without a password besides loopback, e.g. `10.199.0.0/24`; default none. */
  trustNetworks?: string[];
}

/**
 * Start a cluster, or say why none can be started here (`{ skip }`: no binaries, no `postgres` user).
 * @throws Error when initdb or the server fails (its log's tail in the message).
 */
export async function startPostgresCluster(options: PostgresClusterOptions = {}): Promise<PostgresCluster | { skip: string }> {
  const bin = findBinDir();
  if (!bin) return { skip: "Postgres server binaries not found under /usr/lib/postgresql (install Debian's postgresql-15: bash scripts/setup.sh --deps)" };
  const asRoot = process.getuid?.() === 0;
  let owner: { uid: number; gid: number } | null = null;
  if (asRoot) {
    const id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    if (id.status !== 0) return { skip: "no 'postgres' user to run the test server as (Debian's postgresql-15 package creates it)" };
    owner = { uid: Number(id.stdout.trim()), gid: Number(gid.stdout.trim()) };
  }
  const dir = mkdtempSync(join(tmpdir(), 'ramify-pg-'));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const run = (tool: string, args: string[]): void => {
    const argv = asRoot ? ['runuser', '-u', 'postgres', '--', join(bin, tool), ...args] : [join(bin, tool), ...args];
    execFileSync(argv[0] as string, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir });
  };
  const data = join(dir, 'data');
  const listen = options.listenAddresses ?? ['127.0.0.1'];
  for (const address of listen) if (!/^[0-9a-f.:]+$/i.test(address)) throw new Error(`not an IP address: ${address}`);
  const port = await freePort();
  let started = false;
  const stop = (): void => {
    if (started) {
      started = false;
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      } catch {
        /* already gone */
      }
    }
    rmSync(dir, { recursive: true, force: true });
    process.removeListener('exit', stop);
  };
  process.on('exit', stop);
  try {
    run('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C.UTF-8', '--no-sync']);
    for (const cidr of options.trustNetworks ?? []) appendFileSync(join(data, 'pg_hba.conf'), `host all all ${cidr} trust\n`);
    const fast = options.durability === 'durable' ? '' : ' -c fsync=off -c synchronous_commit=off -c full_page_writes=off';
    const serverOptions = `-c listen_addresses=${listen.join(',')} -p ${port} -k ${dir} -c max_connections=200${fast}`;
    run('pg_ctl', ['-D', data, '-o', serverOptions, '-l', join(dir, 'server.log'), '-w', '-t', '30', 'start']);
    started = true;
  } catch (err) {
    const log = existsSync(join(dir, 'server.log')) ? spawnSync('tail', ['-n', '20', join(dir, 'server.log')], { encoding: 'utf8' }).stdout : '';
    stop();
    throw new Error(`could not start a test Postgres: ${(err as Error).message}\n${log}`);
  }
  const version = bin.split('/').at(-2) ?? '?';
  const url = (database: string): string => `postgres://postgres@${listen[0]}:${port}/${database}`;
  return {
    name: `Postgres ${version} on ${listen[0]}:${port}`,
    url,
    async ensureDatabase(database: string, template?: string): Promise<string> {
      for (const name of [database, template ?? 'postgres']) if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a plain database name: ${name}`);
      const client = new pg.Client({ connectionString: url('postgres') });
      await client.connect();
      try {
        const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
        if (found.rowCount === 0) await client.query(`CREATE DATABASE ${database}${template ? ` TEMPLATE ${template}` : ''}`);
      } finally {
        await client.end();
      }
      return url(database);
    },
    stop,
  };
}

/**
 * For a test file's top level: {@link startPostgresCluster}, stopped after the file. Without one it returns
 * `{ skip }` for the file's cases to skip, saying why, except on CI (`CI` set), which installs Postgres and
 * must run them: there it throws.
 * @throws Error on CI without Postgres binaries; when initdb or the server fails.
 */
export async function postgresForTests(options: PostgresClusterOptions = {}): Promise<PostgresCluster | { skip: string }> {
  const cluster = await startPostgresCluster(options);
  if ('skip' in cluster) {
    if (process.env['CI']) throw new Error(`CI must run the Postgres cases: ${cluster.skip}`);
  } else after(() => cluster.stop());
  return cluster;
}
