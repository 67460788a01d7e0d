/** Idle auto-pause: what counts as use of a sandbox, the setting, and the scheduler that pauses idle ones. */
export { SandboxActivity } from './activity.js';
export { checkAutoPause, setAutoPause } from './set-auto-pause.js';
export { AutoPauseScheduler } from './auto-pause.js';
export { ActivityPersister } from './persist-activity.js';
