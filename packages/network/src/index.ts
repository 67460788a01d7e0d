export { NamespaceNetwork, type NamespaceNetworkOptions } from './namespace-network.js';
export { DEFAULT_LAYOUT, DNS_SERVICE_ADDRESS, MAX_SLOT, layoutForPrefix, slotAddresses, slotRange, type SlotLayout } from './slots.js';
export { run, runChecked, type RunResult } from './exec.js';
export * from './egress/index.js';
export * from './ingress/index.js';
export * from './private/index.js';
export * from './agent-channel/index.js';
