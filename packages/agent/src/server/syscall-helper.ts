/**
 * sethostname(2) and clock_settime(2) without starting a process each time. Node makes neither call, and
 * the tools that do (`hostname`, `date`) cost an exec every restore: 100-250 ms in a gVisor sandbox (the
 * ELF load under ptrace, measured), ~0.7 s in a microVM under TCG; a fork x8 pays eight at once. So the
 * agent starts ONE helper at its start, before any checkpoint (it is in every image and restored with it):
 * Perl (`perl-base`, essential on Debian, in every template) running a loop that reads a request per line
 * on stdin and makes the system call itself (`syscall`, with the architecture's call numbers), answering
 * `ok` or `err <reason>` per line. It shows in `ps` as `ramify-agent-helper`; stopped and continued with
 * the other processes around a checkpoint.
 * Without Perl, on another architecture, or once the helper is gone, callers use the tools.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** System call numbers (asm/unistd.h) per Node architecture. */
const CALLS: Record<string, { sethostname: number; clockSettime: number }> = {
  x64: { sethostname: 170, clockSettime: 227 },
  arm64: { sethostname: 161, clockSettime: 112 },
};

/** `h <name>`: sethostname; `c <seconds> <nanoseconds>`: clock_settime(CLOCK_REALTIME). One answer line each. */
const loop = (calls: { sethostname: number; clockSettime: number }): string =>
  [
    '$0 = "ramify-agent-helper"; $| = 1;',
    'while (my $line = <STDIN>) {',
    '  chomp $line; my ($op, $a, $b) = split / /, $line; my $r = -1; $! = 0;',
    `  if ($op eq "h") { my $name = "$a"; $r = syscall(${calls.sethostname}, $name, length $name); }`,
    `  elsif ($op eq "c") { my $ts = pack("q q", $a, $b); $r = syscall(${calls.clockSettime}, 0, $ts); }`,
    '  print $r == 0 ? "ok\\n" : "err " . ($! || "unknown request") . "\\n";',
    '}',
  ].join(' ');

/** How long one request may take before the helper is given up (it answers in milliseconds). */
const REQUEST_TIMEOUT_MS = 3000;

export class SyscallHelper {
  readonly #child: ChildProcess;
  readonly #answers: Array<(line: string | null) => void> = [];
  #gone = false;
  /** Requests one after another: one line out, one line back. */
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(child: ChildProcess) {
    this.#child = child;
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => this.#answers.shift()?.(line));
    const gone = (): void => {
      this.#gone = true;
      for (const answer of this.#answers.splice(0)) answer(null);
    };
    child.on('error', gone);
    child.on('exit', gone);
    child.stdin!.on('error', () => undefined);
    // The agent's own lifetime decides; the helper never keeps it alive.
    child.unref();
    for (const stream of [child.stdin, child.stdout]) (stream as unknown as { unref?: () => void } | null)?.unref?.();
  }

  /**
   * Start the helper; null on an architecture it has no call numbers for. It may still fail to start (then
   * every call answers undefined). `wrap`: argv to run Perl under (tests: `['unshare', '--uts']`).
   */
  static start(options: { wrap?: string[] } = {}): SyscallHelper | null {
    const calls = CALLS[process.arch];
    if (!calls) return null;
    const [cmd, ...args] = [...(options.wrap ?? []), 'perl', '-e', loop(calls)];
    const child = spawn(cmd!, args, { stdio: ['pipe', 'pipe', 'ignore'] });
    return new SyscallHelper(child);
  }

  /** The helper's pid (tests look into its namespaces). */
  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** sethostname(`name`). @returns null on success, the reason on failure; undefined when the helper is gone (use the tool). */
  setHostname(name: string): Promise<string | null | undefined> {
    if (!/^[A-Za-z0-9.-]{1,64}$/.test(name)) return Promise.resolve(undefined);
    return this.#request(`h ${name}`);
  }

  /** clock_settime(CLOCK_REALTIME, `epochMs`). Same results as {@link setHostname}. */
  setClock(epochMs: number): Promise<string | null | undefined> {
    const seconds = Math.floor(epochMs / 1000);
    const nanoseconds = Math.round((epochMs - seconds * 1000) * 1e6);
    return this.#request(`c ${seconds} ${Math.min(nanoseconds, 999_999_999)}`);
  }

  /** End the helper (the agent is closing). */
  stop(): void {
    this.#gone = true;
    this.#child.kill();
  }

  #request(line: string): Promise<string | null | undefined> {
    const next = this.#queue.then(
      () =>
        new Promise<string | null | undefined>((resolve) => {
          if (this.#gone) return resolve(undefined);
          // Stopped or stuck (it answers in milliseconds): given up for good, the tools take over.
          const timer = setTimeout(() => this.stop(), REQUEST_TIMEOUT_MS);
          this.#answers.push((answer) => {
            clearTimeout(timer);
            resolve(answer === null ? undefined : answer === 'ok' ? null : answer.replace(/^err /, ''));
          });
          this.#child.stdin!.write(`${line}\n`);
        }),
    );
    this.#queue = next;
    return next;
  }
}
