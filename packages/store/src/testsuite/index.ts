/**
 * The store's test kit: the conformance suite any Store implementation runs, and a throwaway Postgres
 * cluster to run it (and daemon tests) against. Imported from tests only (`@ramify/store/testsuite`).
 */
export { storeConformance } from './suite.js';
export type { StoreHarness } from './harness.js';
export { postgresForTests, startPostgresCluster, type PostgresCluster, type PostgresClusterOptions } from './postgres-cluster.js';
