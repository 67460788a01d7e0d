#!/usr/bin/env node
// A bench daemon in a process of its own (so what one daemon turns on, e.g. async hooks or Node's
// event-loop monitor, costs nothing to another): `startBenchDaemon` with the JSON options in argv[2],
// prefix argv[3]. Prints one JSON line `{ url, key, metricsAddress, dataDir }` once serving; stops (cleaning up
// everything it made) on SIGTERM or when stdin closes.
import { startBenchDaemon } from './in-process-daemon.mjs';

const options = JSON.parse(process.argv[2] ?? '{}');
const prefix = process.argv[3] ?? 'rmbd';
const daemon = await startBenchDaemon({ prefix, name: prefix, options });
process.stdout.write(`${JSON.stringify({ url: daemon.server.url, key: daemon.key, metricsAddress: daemon.server.metricsAddress, dataDir: daemon.dataDir })}\n`);
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await daemon.stop();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.resume();
