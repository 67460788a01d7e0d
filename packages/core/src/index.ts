export * from './ports/runtime.js';
export * from './ports/network.js';
export * from './ports/snapshot-storage.js';
