#!/usr/bin/env node
// bench/interactive (issue 11; targets in brackets): interactive use of one gVisor sandbox, in one run,
// each figure next to the raw runtime doing the same thing:
//  echo: keystroke echo round trip through the PTY API [p50 <= 10 ms]: one byte sent with the SDK's
//        `sendInput` to `cat` on a terminal in raw mode (so the byte goes through the program, as a
//        shell's line editor echoes it), timed until it comes back in `onData`; one keystroke at a time.
//        Baseline in the same run, same sandbox: one byte through `runsc exec ... cat` (its stdio pipes),
//        the path under the agent's own bridge, without Ramify. Rows between them take layers away
//        (keystrokes as WebSocket frames instead of HTTP requests; the daemon's agent session alone; the
//        agent channel's ping), so the table shows where a keystroke's time goes. Every row is measured
//        in rounds, the rows' order rotating each round, so load from outside falls on all of them alike.
//  sync: local write -> visible in the sandbox through `syncDir` [p50 <= 1 s] (sync.mjs).
//  ssh:  keystroke echo through the SSH gateway with OpenSSH [p50 <= 10 ms] and scp against the files API
//        for the same 100 MB file [>= 0.5x] (ssh.mjs, which also runs alone), printed after the table.
// Each section is one function of a shared context, registered in SECTIONS at the end (`--only a,b`).
// Its own daemon in-process (prefix `rmki`, a temp data dir), as root; removes its sandboxes, namespaces
// and tables afterwards. Needs the packages built and the base rootfs (built once into the shared cache,
// as `npm test` does; or RAMIFY_TEST_ROOTFS). Run it under the real-tests lock:
//   flock /tmp/ramify-real-tests.lock node bench/interactive/run.mjs [--keystrokes 200] [--rounds 4] [--warmup 20] [--only echo]
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { Sandbox } from '@ramify/sdk';
import { until } from '../../packages/daemon/dist/real-test-support.js';
import { EchoCounter } from '../support/echo-counter.mjs';
import { startBenchDaemon } from '../support/in-process-daemon.mjs';
import { nearestRank, ok } from '../support/stats.mjs';
import { syncSection } from './sync.mjs';
import { benchSshAccess, echoSection as sshEchoSection, scpSection } from './ssh.mjs';

const { values } = parseArgs({ options: {
  keystrokes: { type: 'string', default: '200' }, rounds: { type: 'string', default: '4' }, warmup: { type: 'string', default: '20' }, only: { type: 'string' },
} });
const KEYSTROKES = Number(values.keystrokes);
const ROUNDS = Number(values.rounds);
const WARMUP = Number(values.warmup);
const PREFIX = 'rmki';

// ---- shared: rounds, the printer (percentiles: bench/support/stats.mjs) ----

/**
 * A measurement that can be taken a few samples at a time: `open()` readies it (warm-up included) and
 * returns `{ sample(count) => times ms, close() }`. {@link inRounds} takes `total` samples of each in
 * `rounds` rounds, rotating their order every round.
 */
async function inRounds(probes, total, rounds) {
  const opened = [];
  try {
    for (const p of probes) opened.push(await p.open());
    const times = probes.map(() => []);
    const per = Math.ceil(total / rounds);
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < probes.length; k++) {
        const i = (k + r) % probes.length;
        times[i].push(...await opened[i].sample(Math.min(per, total - times[i].length)));
      }
    }
    return times;
  } finally {
    for (const o of opened) await o.close();
  }
}

/**
 * One printed row of latencies (ms): p50/p99 of `times`; `baseline` (another row) gives the p50 ratio;
 * `target` ({ p50: ms }) its verdict, `ok` or `MISSED`.
 */
const latencyRow = (section, what, times, extra = {}) => ({ section, what, n: times.length, p50: nearestRank(times, 0.5), p99: nearestRank(times, 0.99), ...extra });

/** Print latency rows as a table: p50/p99, the ratio to the baseline's p50, the target and its verdict. */
function printLatencyRows(rows) {
  const cells = rows.map((r) => [
    r.section, r.what, String(r.n), r.p50.toFixed(2), r.p99.toFixed(2),
    r.baseline ? `${(r.p50 / r.baseline.p50).toFixed(1)}x` : '-',
    r.target ? `p50 <= ${r.target.p50} ms: ${ok(r.p50, r.target.p50)}` : '-',
  ]);
  const header = ['section', 'measurement', 'n', 'p50 ms', 'p99 ms', 'p50 vs raw', 'target'];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  for (const line of [header, ...cells]) console.log(line.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd());
}

// ---- keystrokes: the round-trip loop (the echo counter: bench/support/echo-counter.mjs) ----

/**
 * A keystroke prober: `send(byte)` puts one byte on its way, `echoes` counts what came back; each
 * keystroke waits for its own echo (bounded) before the next. `open()` sends {@link WARMUP} unmeasured.
 */
function keystrokes(send, echoes, close) {
  const sample = async (count) => {
    const times = [];
    for (let i = 0; i < count; i++) {
      const before = echoes.received;
      const t = performance.now();
      const sent = send(0x61 + (i % 26));
      await echoes.past(before, `keystroke ${i} came back`);
      times.push(performance.now() - t);
      await sent;
    }
    return times;
  };
  return (async () => {
    await sample(WARMUP);
    return { sample, close };
  })();
}

/** A command for a terminal that echoes each byte through a program: raw mode, then `cat`. */
const ECHO_CMD = "stty raw -echo && printf 'ECHO-READY' && exec cat";

/** `onData` for an {@link ECHO_CMD} terminal: counts echoed bytes once the ready mark has come. */
function echoSink() {
  const echoes = new EchoCounter();
  let ready = false;
  const onData = (bytes) => {
    if (ready) echoes.add(bytes.byteLength);
    else if (Buffer.from(bytes).toString().includes('ECHO-READY')) ready = true;
  };
  return { echoes, onData, ready: () => until(async () => ready, 'the terminal is raw and cat runs') };
}

// ---- measurements: one function each ----

/** Keystroke echo through the PTY API: the SDK's `sendInput` (HTTP) to `cat` on a raw terminal, until `onData` has it. */
const ptyEcho = ({ sbx }) => ({
  async open() {
    const sink = echoSink();
    const term = await sbx.pty.create({ cmd: ECHO_CMD, onData: sink.onData });
    await sink.ready();
    return keystrokes((byte) => term.sendInput(new Uint8Array([byte])), sink.echoes, () => term.kill());
  },
});

/** The same over the terminal stream's WebSocket: keystrokes as binary frames on channel 0, not HTTP requests. */
const ptyEchoWebSocket = ({ server, key, sbx }) => ({
  async open() {
    const sink = echoSink();
    const ws = new WebSocket(`${server.url.replace(/^http/, 'ws')}/v1/sandboxes/${sbx.sandboxId}/pty/stream`, { headers: { authorization: `Bearer ${key}` } });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    // Binary frames: [channel, ...bytes]; channel 1 is the terminal's output.
    ws.on('message', (data, isBinary) => { if (isBinary && data[0] === 1) sink.onData(data.subarray(1)); });
    ws.send(JSON.stringify({ type: 'startPty', request: { cmd: ECHO_CMD } }));
    await sink.ready();
    // Closing the stream leaves the terminal running: its cat is killed with the sandbox.
    return keystrokes((byte) => void ws.send(Buffer.from([0, byte])), sink.echoes, async () => ws.close());
  },
});

/** The daemon's own hop: core's agent session (`sendStdin` -> `onStdout`), no HTTP, no WebSocket. */
const agentEcho = ({ server, sbx }) => ({
  async open() {
    const session = await server.core.sessions.get(sbx.sandboxId);
    const sink = echoSink();
    const { pid } = await session.start({ cmd: ECHO_CMD, pty: { cols: 80, rows: 24 }, stdin: true }, { onStdout: sink.onData });
    await sink.ready();
    return keystrokes((byte) => session.sendStdin(pid, new Uint8Array([byte])), sink.echoes, () => session.signal(pid, 'SIGKILL').catch(() => undefined));
  },
});

/** The agent channel alone: a ping to the agent and its answer (runsc exec socat bridge, the agent's loop). */
const agentPing = ({ server, sbx }) => ({
  async open() {
    const session = await server.core.sessions.get(sbx.sandboxId);
    const sample = async (count) => {
      const times = [];
      for (let i = 0; i < count; i++) {
        const t = performance.now();
        await session.ping();
        times.push(performance.now() - t);
      }
      return times;
    };
    await sample(WARMUP);
    return { sample, close: async () => undefined };
  },
});

/** The raw baseline: one byte through `runsc exec <container> cat` (stdio pipes), same sandbox. */
const runscExecEcho = ({ server, dataDir, sbx }) => ({
  async open() {
    const containerId = await server.core.runtimes[0].containerOf(sbx.sandboxId);
    const child = spawn('runsc', ['--root', join(dataDir, 'runtime', 'gvisor', 'state'), 'exec', containerId, 'cat'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const echoes = new EchoCounter();
    child.stdout.on('data', (chunk) => echoes.add(chunk.length));
    const exited = new Promise((resolve) => child.on('close', resolve));
    // Ready once a first byte made it through (cat started).
    child.stdin.write('r');
    await echoes.past(0, 'runsc exec cat answers', 30_000);
    return keystrokes((byte) => void child.stdin.write(Buffer.from([byte])), echoes, async () => {
      child.stdin.end();
      await exited;
    });
  },
});

/**
 * Section `echo`: the PTY API against the raw runsc exec echo, same sandbox, same run, and between them
 * the layers a keystroke crosses.
 */
async function echoSection(ctx) {
  const probes = [ptyEcho, ptyEchoWebSocket, agentEcho, agentPing, runscExecEcho].map((p) => p(ctx));
  const [pty, ws, agent, ping, raw] = await inRounds(probes, KEYSTROKES, ROUNDS);
  const baseline = latencyRow('echo', 'raw: runsc exec cat (stdio pipes)', raw);
  return [
    latencyRow('echo', 'PTY API: SDK sendInput (HTTP) -> onData', pty, { baseline, target: { p50: 10 } }),
    latencyRow('echo', '  keystrokes as WebSocket frames instead', ws, { baseline }),
    latencyRow('echo', '  agent session alone (no HTTP/WebSocket)', agent, { baseline }),
    latencyRow('echo', '  agent ping (daemon <-> agent channel)', ping, { baseline }),
    baseline,
  ];
}

// Further sections (SSH echo, scp vs files API, sync latency) go here: `async (ctx) => rows`, printed
// with printLatencyRows (or a throughput printer beside it).
const SECTIONS = { echo: echoSection, sync: (ctx) => syncSection(ctx), ssh: async () => [] };

// ---- the run ----

const chosen = values.only ? values.only.split(',') : Object.keys(SECTIONS);
for (const name of chosen) if (!SECTIONS[name]) throw new Error(`--only: no section '${name}' (sections: ${Object.keys(SECTIONS).join(', ')})`);

const { server, key, call, dataDir, stop } = await startBenchDaemon({ prefix: PREFIX, name: 'interactive', options: { ssh: { host: '127.0.0.1', port: 0 } } });
try {
  const sbx = await Sandbox.create({ template: 'base', timeoutMs: 3_600_000, apiUrl: server.url, apiKey: key });
  const runtime = server.core.runtimes[0];
  console.log(`bench/interactive: ${runtime.name} (${runtime.version ?? '?'}), one sandbox of the base rootfs, daemon in-process, load average ${loadavg()[0].toFixed(1)}`);
  console.log(`echo: ${KEYSTROKES} keystrokes per row, one at a time, in ${ROUNDS} rounds (rows in rotating order) after ${WARMUP} warm-up each`);
  const rows = [];
  for (const name of chosen) rows.push(...await SECTIONS[name]({ server, key, dataDir, sbx, call }));
  printLatencyRows(rows);
  if (chosen.includes('ssh')) {
    // The SSH half (bench/interactive/ssh.mjs): keystroke echo through the gateway and scp against the files API.
    const work = await mkdtemp(join(tmpdir(), 'ramify-bench-interactive-ssh-'));
    try {
      const ctx = { server, key, call, dataDir, sandboxId: sbx.sandboxId, ssh: await benchSshAccess({ server, call, work }), work };
      console.log('ssh: the real OpenSSH client through the gateway (bench/interactive/ssh.mjs)');
      for (const line of [...await sshEchoSection(ctx), ...await scpSection(ctx)]) console.log(`  ${line}`);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
} finally {
  await stop();
}
