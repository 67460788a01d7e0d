/**
 * Module hooks (node:module `register`) that append the URL of every module loaded through the ES module
 * loader to the file named by `RAMIFY_IMPORT_LOG`, one a line. Registered by `import-recorder.ts`.
 */
import { appendFileSync } from 'node:fs';

type LoadNext = (url: string, context: unknown) => Promise<unknown>;

/** The `load` hook: record `url`, then load it as usual. */
export async function load(url: string, context: unknown, next: LoadNext): Promise<unknown> {
  const log = process.env.RAMIFY_IMPORT_LOG;
  if (log) appendFileSync(log, `${url}\n`);
  return next(url, context);
}
