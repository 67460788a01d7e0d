/**
 * Use-case: read one sandbox.
 */
import type { Core } from '../context.js';
import type { SandboxRecord } from '../ports/store.js';
import { loadSandbox } from './records.js';

/**
 * The sandbox's current record (killed sandboxes too, with state `killed`).
 * @throws RamifyError `SANDBOX_NOT_FOUND` for an unknown id.
 */
export async function getSandbox(core: Core, sandboxId: string): Promise<SandboxRecord> {
  return loadSandbox(core, sandboxId);
}
