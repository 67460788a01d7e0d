export * from './errors.js';
export * from './api.js';
export * from './agent.js';
export * from './output-capture.js';
export * from "./routes.js";
export * from "./pty.js";
export * from './watch.js';
export * from './ssh.js';
