/**
 * Child-process entry of the conformance harness: starts a real Ramify daemon with `serve()` and prints
 * one JSON line `{"url": "http://127.0.0.1:PORT"}` on stdout once it listens. SIGTERM closes it
 * gracefully (sandboxes keep running); SIGKILL is what the crash cases send.
 *
 * Usage: `node daemon-entry.js '<DaemonEntryConfig as JSON>'`. The daemon's JSON log goes to stderr.
 */
import type { RuntimeName } from '@ramify/contracts';
import { serve, type RamifyServer, type ServeOptions } from '@ramify/daemon';

/** What the harness passes as argv[2] (JSON). */
export interface DaemonEntryConfig {
  dataDir: string;
  cacheDir: string;
  /** Network prefix (namespaces, veths, nftables table): 1-4 lowercase letters. */
  prefix: string;
  /** 0 picks a free port. */
  port: number;
  logLevel: NonNullable<ServeOptions['logLevel']>;
  /** Network slots kept prepared for the next creates (core's `prewarmSlots`). */
  warmSlots: number;
  /** Runtimes the daemon opens, the first its default (only what the suite needs: no time spent on others' images). */
  runtimes: RuntimeName[];
}

/** The single line written to stdout once the daemon listens. */
export interface DaemonEntryReady {
  url: string;
}

async function main(): Promise<void> {
  const raw = process.argv[2];
  if (!raw) throw new Error('usage: daemon-entry.js <config json>');
  const config = JSON.parse(raw) as DaemonEntryConfig;
  let server: RamifyServer | undefined;
  let closing = false;
  process.on('SIGTERM', () => {
    if (closing) return;
    closing = true;
    const done = (code: number): void => process.exit(code);
    (server ? server.close() : Promise.resolve()).then(() => done(0), (err: unknown) => {
      process.stderr.write(`daemon-entry: close failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      done(1);
    });
  });
  server = await serve({
    dataDir: config.dataDir,
    cacheDir: config.cacheDir,
    host: '127.0.0.1',
    port: config.port,
    logLevel: config.logLevel,
    network: { prefix: config.prefix },
    runtimes: config.runtimes,
    coreOptions: { prewarmSlots: config.warmSlots },
    // The first-start key line would mix with our JSON; the key is read from <dataDir>/api-key.
    print: () => undefined,
  });
  const ready: DaemonEntryReady = { url: server.url };
  process.stdout.write(`${JSON.stringify(ready)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`daemon-entry: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
