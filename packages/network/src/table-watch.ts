/**
 * The watchdog loop shared by the host tables (the egress table, the ingress table): every `intervalMs`
 * (default 2000) run `ensure` (re-install the table if it is gone; resolves true when it did), one run at a
 * time, on an unref'd timer. Returns the function that stops it.
 */
export interface TableWatchOptions {
  intervalMs?: number;
  /** Called after `ensure` re-installed the table. */
  onReinstall?: () => void;
  onError?: (err: unknown) => void;
}

export function watchTable(ensure: () => Promise<boolean>, options: TableWatchOptions = {}): () => void {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    ensure()
      .then((reinstalled) => reinstalled && options.onReinstall?.())
      .catch((err: unknown) => options.onError?.(err))
      .finally(() => (busy = false));
  }, options.intervalMs ?? 2000);
  timer.unref();
  return () => clearInterval(timer);
}
