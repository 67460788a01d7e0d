/** The ingress served from a thread of its own (see ./ingress-thread.ts and docs/design/INGRESS.md). */
export { IngressThread, type IngressThreadOptions } from './ingress-thread.js';
