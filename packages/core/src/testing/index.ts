/**
 * `@ramify/core/testing`: TEST DOUBLES (fake runtime, network, agent; manual clock; a directory-backed
 * snapshot storage). For core's use-case tests and the daemon's HTTP-edge tests only: a test that uses
 * them covers core logic or HTTP plumbing, never a real runtime.
 */
export { FakeAgentSession, type FakeGuestState } from './fake-agent.js';
export { FakeRuntime, FakeNetwork, DirSnapshotStorage, ManualClock, type FakeCheckpointBehaviour } from './fake-ports.js';
export { FakeEgressEnforcer } from './fake-egress.js';
export { FakeNetworkEnforcer } from './fake-networks.js';
export { createTestWorld, seedTemplate, openSqliteStore, TEST_HOST_ID, type SeedTemplateOptions, type TestWorld } from './world.js';
export { RecordingTelemetry, createRecordedWorld, type RecordedOperation } from './recording-telemetry.js';
