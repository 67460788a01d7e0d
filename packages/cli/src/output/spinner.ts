/**
 * A progress line on stderr for slow operations: shown only on a TTY, only after the operation has
 * taken longer than a second, and erased when it ends. Never writes to stdout.
 */
const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/** Delay before a spinner appears, ms. */
export const SPINNER_DELAY_MS = 1000;

/** A writable terminal-ish stream (process.stderr). */
export interface StatusStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): boolean;
}

/** A live status line; `update` changes the text, `stop` erases it. A no-op when `stream` is not a TTY. */
export class StatusLine {
  private timer: NodeJS.Timeout | undefined;
  private frame = 0;
  private shown = false;
  private readonly started = Date.now();

  constructor(private text: string, private readonly stream: StatusStream = process.stderr, delayMs = SPINNER_DELAY_MS) {
    if (!stream.isTTY) return;
    this.timer = setTimeout(() => {
      this.timer = setInterval(() => this.render(), 100);
      this.render();
    }, delayMs);
  }

  update(text: string): void {
    this.text = text;
    if (this.shown) this.render();
  }

  /** Print `line` above the status line (the status line is redrawn below it). */
  log(line: string): void {
    if (this.shown) this.stream.write('\r\x1b[2K');
    this.stream.write(`${line}\n`);
    if (this.shown) this.render();
  }

  stop(): void {
    clearTimeout(this.timer);
    clearInterval(this.timer);
    this.timer = undefined;
    if (this.shown) this.stream.write('\r\x1b[2K');
    this.shown = false;
  }

  private render(): void {
    this.shown = true;
    this.frame = (this.frame + 1) % FRAMES.length;
    const secs = ((Date.now() - this.started) / 1000).toFixed(1);
    const line = `${FRAMES[this.frame]} ${this.text} ${secs}s`;
    const max = (this.stream.columns || 80) - 1;
    this.stream.write(`\r\x1b[2K${line.length > max ? line.slice(0, max) : line}`);
  }
}

/** Run `fn` with a spinner labelled `label` (TTY only, after a second). */
export async function withSpinner<T>(label: string, fn: () => Promise<T>, stream?: StatusStream): Promise<T> {
  const status = new StatusLine(label, stream);
  try {
    return await fn();
  } finally {
    status.stop();
  }
}
