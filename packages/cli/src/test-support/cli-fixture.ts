/**
 * Test support for the CLI's protocol tests: the built `ramify` CLI (dist/main.js) runs as a child process
 * against the in-test contract fixture (`@ramify/sdk/testing`), with RAMIFY_HOME in a temporary directory.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startContractServer, type ContractServer, type ContractServerOptions } from '@ramify/sdk/testing';

const MAIN = fileURLToPath(new URL('../main.js', import.meta.url));

/** One finished CLI run: exit code (null: killed by a signal), output as text and stdout as bytes. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  stdoutBytes: Buffer;
}

export interface CliRunOptions {
  /** Added to (undefined: removed from) the environment, which carries the fixture's URL and key. */
  env?: Record<string, string | undefined>;
  /** Written to the CLI's stdin, which is then closed (default: closed at once). */
  stdin?: string | Buffer;
  cwd?: string;
  /** Close the read end of the CLI's stdout once its first bytes arrived, as `ramify ... | head -1` does. */
  closeStdoutOnData?: boolean;
}

export interface CliFixture {
  /** The contract fixture (valid once the file's `before` hooks ran). */
  readonly server: ContractServer;
  /** The temporary RAMIFY_HOME, also a scratch directory for the test's files. */
  readonly dir: string;
  /** Run the built CLI with `args`. */
  ramify(args: string[], opts?: CliRunOptions): Promise<CliRun>;
  /** `ramify sandbox create`; the new sandbox's id. Throws unless it exits 0. */
  newSandbox(): Promise<string>;
}

/**
 * Register `before`/`after` hooks in the calling test file that start the fixture (with `options`) and a
 * temporary directory named after `name`, and stop and remove both afterwards.
 */
export function useCliFixture(name: string, options: ContractServerOptions = {}): CliFixture {
  let server: ContractServer | undefined;
  let dir: string | undefined;
  before(async () => {
    server = await startContractServer(options);
    dir = await mkdtemp(join(tmpdir(), `ramify-cli-${name}-`));
  });
  after(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const started = (): { server: ContractServer; dir: string } => {
    if (!server || !dir) throw new Error('the CLI fixture is used before its before() hook ran');
    return { server, dir };
  };
  const fixture: CliFixture = {
    get server() {
      return started().server;
    },
    get dir() {
      return started().dir;
    },
    ramify(args, opts = {}) {
      const { server: s, dir: home } = started();
      const env: Record<string, string | undefined> = { ...process.env, RAMIFY_API_URL: s.url, RAMIFY_API_KEY: s.apiKey, RAMIFY_HOME: home, ...opts.env };
      for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
      const child = spawn(process.execPath, [MAIN, ...args], { env, cwd: opts.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (c: Buffer) => {
        out.push(c);
        if (opts.closeStdoutOnData) child.stdout.destroy();
      });
      child.stderr.on('data', (c: Buffer) => err.push(c));
      child.stdin.on('error', () => undefined); // the CLI may exit before reading its stdin
      child.stdin.end(opts.stdin ?? '');
      return new Promise((resolve, reject) => {
        child.on('error', reject);
        child.on('close', (code) => {
          const stdoutBytes = Buffer.concat(out);
          resolve({ code, stdout: stdoutBytes.toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), stdoutBytes });
        });
      });
    },
    async newSandbox() {
      const r = await fixture.ramify(['sandbox', 'create']);
      if (r.code !== 0) throw new Error(`ramify sandbox create exited ${r.code}: ${r.stderr}`);
      return r.stdout.trim();
    },
  };
  return fixture;
}
