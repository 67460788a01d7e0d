/**
 * Phase durations of one operation, for debug logs that say where a create, resume, fork or pause
 * spends its time: `mark('restoreMs')` records the milliseconds since the previous mark.
 */
export function phaseTimer(): { mark: (name: string) => void; phases: Record<string, number> } {
  const phases: Record<string, number> = {};
  let last = performance.now();
  return {
    phases,
    mark(name: string): void {
      const now = performance.now();
      phases[name] = Math.round(now - last);
      last = now;
    },
  };
}
