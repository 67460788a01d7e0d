export * from './framing.js';
export * from './messages.js';
export * from './wire-errors.js';
export * from './credit.js';
export * from './chunk-queue.js';
export * from './virtio-handshake.js';
export * from './channel-hello.js';
