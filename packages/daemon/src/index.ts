/**
 * @ramify/daemon: the composition root and HTTP/WebSocket server of Ramify.
 */
export { serve, adaptLogger, type ServeOptions, type RamifyServer, type StopReason } from './serve.js';
export { dataDirHolder, dataDirInUse, describeHolder, stopHint, programOf, DATA_DIR_LOCK_FILE, type DataDirHolder, type DataDirHolderRecord } from './data-dir-lock.js';
export { buildApp, API_ROUTES, type BuildAppOptions } from './app.js';
export { compose, type ComposeOptions, type ComposeOverrides, type Composition, type NetworkOptions } from './compose.js';
export type { GvisorOptions, MicrovmOptions } from './runtimes.js';
export type { SshOptions } from './ssh/gateway.js';
export { ensureApiKey } from './api-key-bootstrap.js';
export { resetNetwork, type NetworkReset } from './reset-network.js';
export { resolveDataDir, resolveCacheDir, resolveMaxOutputBytes, DEFAULT_DATA_DIR, DEFAULT_HOST, DEFAULT_PORT, API_KEY_FILE } from './config.js';
export { toHttpError, type HttpError } from './http/errors.js';
export type { TracedCalls } from './http/route.js';
export { DAEMON_VERSION } from './routes/meta.js';
