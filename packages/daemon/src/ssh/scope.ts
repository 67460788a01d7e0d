/** What every channel of one authenticated SSH connection works on. */
import type { Core, SandboxRecord } from '@ramify/core';

export interface SshScope {
  core: Core;
  /** The sandbox the connection authenticated for (its user name). */
  sandboxId: string;
  /**
   * Resolves with the running sandbox, resuming it when paused (whatever its autoResume: the client holds
   * a key or token for it), within the daemon's wake bound.
   * @throws RamifyError `SANDBOX_WAKING`, `SANDBOX_KILLED`, `SANDBOX_FAILED`, and the resume's errors.
   */
  ensureRunning(): Promise<SandboxRecord>;
}
