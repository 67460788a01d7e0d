/**
 * Reading a process's output from byte offsets (what `command_output` returns): re-attach to the
 * process with the SDK (`commands.connect(pid, { from })`, a replay of what the sandbox still holds,
 * the last 8 MiB of each stream), take at most `maxBytes` of each stream, optionally wait a while for
 * the process to exit, then detach. The process is never touched.
 */
import { RamifyError, type ProcessInfo, type Sandbox } from '@ramify/sdk';
import { wholeChars } from '../cut.js';

/** How long to wait for the replay to deliver what the process had written, ms (it streams at once). */
const SETTLE_MS = 5_000;
const POLL_MS = 20;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** At most `max` bytes of one stream from `offset`, counting everything that arrives. */
class StreamTake {
  private readonly chunks: Buffer[] = [];
  private taken = 0;
  private seen = 0;
  constructor(readonly offset: number, private readonly max: number) {}

  push(chunk: Uint8Array): void {
    this.seen += chunk.byteLength;
    if (this.taken >= this.max) return;
    const part = chunk.subarray(0, this.max - this.taken);
    this.chunks.push(Buffer.from(part));
    this.taken += part.byteLength;
  }

  /** True once everything up to `total` arrived, or the take is full. */
  done(total: number): boolean {
    return this.offset + this.seen >= total || this.taken >= this.max;
  }

  /** The text taken (a character cut at the end is left for the next read) and the offset to read on from. */
  result(): { text: string; nextOffset: number } {
    const all = Buffer.concat(this.chunks);
    const bytes = this.taken >= this.max ? wholeChars(all) : all;
    return { text: bytes.toString('utf8'), nextOffset: this.offset + bytes.byteLength };
  }
}

/** What {@link readProcessOutput} returns. */
export interface ProcessOutput {
  info: ProcessInfo;
  stdout: string;
  stderr: string;
  /** Offsets to pass next time to read on (bytes). */
  nextStdoutOffset: number;
  nextStderrOffset: number;
}

/** Options of {@link readProcessOutput}. */
export interface ReadOutputOpts {
  stdoutOffset: number;
  stderrOffset: number;
  /** Most bytes of each stream to return. */
  maxBytes: number;
  /** Wait up to this long for a running process to exit, ms; 0 returns at once. */
  waitMs: number;
}

async function processInfo(sbx: Sandbox, pid: number): Promise<ProcessInfo> {
  const info = (await sbx.commands.list()).find((p) => p.pid === pid);
  if (!info) throw new RamifyError('PROCESS_NOT_FOUND', `process ${pid} not found in sandbox ${sbx.sandboxId}`, { pid });
  return info;
}

/**
 * `pid`'s output from the given offsets, its state after waiting up to `waitMs` for it to exit.
 * @throws RamifyError `PROCESS_NOT_FOUND`, `SANDBOX_NOT_FOUND`, `INVALID_STATE` (paused) from the API.
 */
export async function readProcessOutput(sbx: Sandbox, pid: number, opts: ReadOutputOpts): Promise<ProcessOutput> {
  let info = await processInfo(sbx, pid);
  const out = new StreamTake(opts.stdoutOffset, opts.maxBytes);
  const err = new StreamTake(opts.stderrOffset, opts.maxBytes);
  const handle = await sbx.commands.connect(pid, {
    from: { stdout: opts.stdoutOffset, stderr: opts.stderrOffset },
    onStdoutBytes: (chunk) => out.push(chunk),
    onStderrBytes: (chunk) => err.push(chunk),
  });
  try {
    // The exit arrives on the stream: watch the handle, not the API (no calls while waiting).
    if (info.running) for (const deadline = Date.now() + opts.waitMs; !handle.exited && Date.now() < deadline;) await sleep(POLL_MS);
    info = await processInfo(sbx, pid);
    for (const deadline = Date.now() + SETTLE_MS; !(out.done(info.stdoutBytes) && err.done(info.stderrBytes)) && Date.now() < deadline;) await sleep(POLL_MS);
  } finally {
    await handle.disconnect();
  }
  const o = out.result();
  const e = err.result();
  return { info, stdout: o.text, stderr: e.text, nextStdoutOffset: o.nextOffset, nextStderrOffset: e.nextOffset };
}
