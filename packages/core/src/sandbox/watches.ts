/**
 * Use-cases: watching a directory of a running sandbox (see contracts' `watch.ts`). A watch is the
 * agent's: these start one, listen to one again from a sequence number, and stop one. A listener is
 * told when the agent channel under it closes (a pause, a kill): the watch goes on in the sandbox, and
 * the client re-attaches once it runs again.
 */
import { RamifyError, isRamifyError, type AgentWatchHandlers, type WatchInfo, type WatchOptions } from '@ramify/contracts';
import type { Core } from '../context.js';
import { agentFor } from './agent-access.js';
import type { StreamSubscription } from './commands.js';

/** A watch's handlers, plus a notice that the agent channel under them closed. */
export interface WatchStreamHandlers extends AgentWatchHandlers {
  /** The channel closed before the watch ended; re-attach from the last sequence number later. */
  onDisconnect?: (reason: string) => void;
}

/**
 * Start watching `options.path` (recursively when asked); resolves once every later change is reported.
 * @throws RamifyError `FILE_NOT_FOUND`, `NOT_A_DIRECTORY` (the path is a file), `WATCH_UNAVAILABLE`
 *   (the template has no `inotifywait`), `SANDBOX_NOT_FOUND`, `INVALID_STATE` (paused).
 */
export async function startWatch(core: Core, sandboxId: string, options: WatchOptions, handlers: WatchStreamHandlers): Promise<WatchInfo & StreamSubscription> {
  const session = await agentFor(core, sandboxId);
  const unwatch = handlers.onDisconnect ? core.sessions.whenClosed(session, handlers.onDisconnect) : () => undefined;
  try {
    const started = await session.watch(options, handlers).catch((err: unknown) => {
      throw olderAgent(err);
    });
    return { watchId: started.watchId, path: started.path, recursive: started.recursive, nextSeq: started.nextSeq, detach: () => (unwatch(), started.detach()) };
  } catch (err) {
    unwatch();
    throw err;
  }
}

/**
 * Listen to watch `watchId` again from sequence number `from` (replay, then live).
 * @throws RamifyError `WATCH_NOT_FOUND`, and as {@link startWatch}.
 */
export async function attachWatch(
  core: Core,
  sandboxId: string,
  watchId: string,
  from: number,
  handlers: WatchStreamHandlers,
): Promise<{ from: number; path: string; recursive: boolean } & StreamSubscription> {
  const session = await agentFor(core, sandboxId);
  const unwatch = handlers.onDisconnect ? core.sessions.whenClosed(session, handlers.onDisconnect) : () => undefined;
  try {
    const attached = await session.attachWatch(watchId, from, handlers);
    return { from: attached.from, path: attached.path, recursive: attached.recursive, detach: () => (unwatch(), attached.detach()) };
  } catch (err) {
    unwatch();
    throw err;
  }
}

/** Stop a watch. @throws RamifyError `WATCH_NOT_FOUND`, and as {@link startWatch}. */
export async function stopWatch(core: Core, sandboxId: string, watchId: string): Promise<void> {
  await (await agentFor(core, sandboxId)).stopWatch(watchId);
}

/** An agent older than watching answers `BAD_REQUEST` (unknown method): say what to do about it. */
function olderAgent(err: unknown): unknown {
  if (!isRamifyError(err) || err.code !== 'BAD_REQUEST' || !err.message.includes("unknown agent method 'watch'")) return err;
  return new RamifyError('WATCH_UNAVAILABLE', 'this sandbox was made from a template built before file watching: rebuild the template (ramify template build) and create the sandbox again');
}
