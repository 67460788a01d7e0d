/**
 * Real child processes for tests that signal processes found in a synthetic /proc (the freezer, the OOM
 * guard), so they can only ever signal these: `sleep 300`s killed, and the temp directory removed, after
 * the test file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';

export interface Sleepers {
  /** A temp directory for the synthetic /proc, removed after the file. */
  dir: string;
  /** Start one more `sleep 300`. */
  spawn(): ChildProcess;
}

/** Register the cleanup (`after`) and hand out sleepers. `name` names the temp directory. */
export function sleepers(name: string): Sleepers {
  const dir = mkdtempSync(join(tmpdir(), `ramify-${name}-`));
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  return {
    dir,
    spawn: () => {
      const child = spawn('sleep', ['300'], { stdio: 'ignore' });
      children.push(child);
      return child;
    },
  };
}
