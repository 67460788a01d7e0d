/**
 * The Store conformance suite: the port's behaviours (core's `ports/store.ts`) that every implementation
 * keeps, written once and run against each database by a test file per harness:
 * `storeConformance(harness)` registers the cases with node:test (containerd's `snapshots/testsuite` habit).
 */
import { describe } from 'node:test';
import { accessCases } from './access-cases.js';
import { crossProcessCases } from './cross-process-cases.js';
import { eventCases } from './event-cases.js';
import type { StoreHarness } from './harness.js';
import { hostCases } from './host-cases.js';
import { logCases } from './log-cases.js';
import { networkCases } from './network-cases.js';
import { sandboxCases } from './sandbox-cases.js';
import { snapshotCases } from './snapshot-cases.js';
import { usageCases } from './usage-cases.js';

/** Register the whole suite for `harness` (skipped, with its reason, when the harness says so). */
export function storeConformance(harness: StoreHarness): void {
  describe(`Store conformance: ${harness.name}`, { skip: harness.skip ?? false }, () => {
    describe('sandboxes', () => sandboxCases(harness));
    describe('snapshots and templates', () => snapshotCases(harness));
    describe('teams, keys, audit, slots, SSH, tokens, egress policies', () => accessCases(harness));
    describe('bounded logs', () => logCases(harness));
    describe('events and webhooks', () => eventCases(harness));
    describe('usage and budgets', () => usageCases(harness));
    describe('networks', () => networkCases(harness));
    describe('hosts and placement', () => hostCases(harness));
    describe('several processes: quota room, delivery claims, event positions and notifications', () => crossProcessCases(harness));
  });
}

export type { StoreHarness } from './harness.js';
