/** Two-way sync of a local directory with a sandbox directory: see `session.ts` and docs/design/SYNC.md. */
export { syncDir, SYNC_DEBOUNCE_MS, type SyncOpts, type SyncSession, type SyncChange, type SyncProgress } from './session.js';
export { DEFAULT_IGNORES, IGNORE_FILE } from './ignore-rules.js';
export { statePath, STATE_DIR } from './state.js';
