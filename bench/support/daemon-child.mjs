// Start `daemon-process.mjs` (a bench daemon in a process of its own) and talk to it: the benches that
// compare daemons (bench/lifecycle/observability.mjs) or measure this checkout's daemon (bench/lifecycle/run.mjs).
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { createInterface } from 'node:readline';

/**
 * Start a bench daemon with serve() `options` under network prefix `prefix`; its log (stderr) goes to the
 * file `logPath` when given, else to this process's stderr. Resolves once it serves, with
 * `{ url, key, metricsAddress, dataDir, pid, stop }`; `stop()` resolves once it has removed everything it made.
 */
export async function startDaemonChild(prefix, options, { logPath } = {}) {
  const stderr = logPath ? openSync(logPath, 'w') : 'inherit';
  // RAMIFY_BENCH_DAEMON_NODE_ARGS: Node options for the daemon's process only (e.g. `--cpu-prof
  // --cpu-prof-dir=/tmp/prof`, which NODE_OPTIONS refuses); the profile is written when it stops.
  const nodeArgs = process.env.RAMIFY_BENCH_DAEMON_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, new URL('./daemon-process.mjs', import.meta.url).pathname, JSON.stringify(options), prefix], { stdio: ['pipe', 'pipe', stderr] });
  const [line] = await Promise.race([
    createInterface({ input: child.stdout })[Symbol.asyncIterator]().next().then((r) => [r.value]),
    new Promise((_, reject) => child.once('exit', (code) => reject(new Error(`the ${prefix} daemon exited (${code}) before serving${logPath ? `: see ${logPath}` : ''}`)))),
  ]);
  const info = JSON.parse(line);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return { ...info, pid: child.pid, stop: async () => { child.stdin.end(); await exited; } };
}
