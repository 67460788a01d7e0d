/**
 * Use-case: turn a sandbox's idle auto-pause on (`{ idleMs }`), change it, or off (`null`). Stored before it
 * returns; running and paused sandboxes alike (a paused one is paused already: it applies after its next
 * resume). Turning it on starts the idle time afresh.
 */
import { MAX_AUTO_PAUSE_IDLE_MS, MIN_AUTO_PAUSE_IDLE_MS, invalidField, quote, type AutoPause } from '@ramify/contracts';
import type { Core } from '../context.js';
import { loadSandbox } from '../lifecycle/records.js';
import { assertNotKilled } from '../lifecycle/state-machine.js';
import type { SandboxRecord } from '../ports/store.js';

/**
 * `autoPause` checked and copied: `idleMs` an integer from 10000 to 86400000 ms, or null (off).
 * @throws RamifyError `VALIDATION_FAILED` at `body.autoPause.idleMs` (where both the create and
 *   `PUT /v1/sandboxes/{id}/auto-pause` carry it; details `field: 'autoPause.idleMs'`, `issues`).
 */
export function checkAutoPause(autoPause: AutoPause | null | undefined): AutoPause | null {
  if (autoPause === null || autoPause === undefined) return null;
  const { idleMs } = autoPause;
  if (typeof idleMs !== 'number' || !Number.isInteger(idleMs) || idleMs < MIN_AUTO_PAUSE_IDLE_MS || idleMs > MAX_AUTO_PAUSE_IDLE_MS) {
    const got = typeof idleMs === 'string' ? quote(idleMs) : JSON.stringify(idleMs) ?? 'nothing';
    throw invalidField('body.autoPause.idleMs', `must be an idle time, an integer from ${MIN_AUTO_PAUSE_IDLE_MS} to ${MAX_AUTO_PAUSE_IDLE_MS} ms, got ${got}`, { field: 'autoPause.idleMs' });
  }
  return { idleMs };
}

/**
 * Set the idle auto-pause of `sandboxId` (null: off).
 * @returns the updated record.
 * @throws RamifyError `VALIDATION_FAILED`, `SANDBOX_NOT_FOUND` (also when killed; nothing is stored then).
 */
export async function setAutoPause(core: Core, sandboxId: string, autoPause: AutoPause | null): Promise<SandboxRecord> {
  const checked = checkAutoPause(autoPause);
  return core.locks.run(sandboxId, async () => {
    const record = await loadSandbox(core, sandboxId);
    assertNotKilled(sandboxId, record.state);
    const updated = await core.store.updateSandbox(sandboxId, { autoPause: checked });
    core.activity.touch(sandboxId);
    return updated;
  });
}
