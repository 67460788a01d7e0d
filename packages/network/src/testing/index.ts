/**
 * `@ramify/network/testing`: test rigs that build their own namespaces (never for production use).
 */
export { FakeInternet, type FakeInternetOptions } from './fake-internet.js';
export { DEFAULT_FAKE_DNS, DEFAULT_FAKE_ECHO, DEFAULT_FAKE_WEB_HOSTS, DEFAULT_FAKE_ZONE } from './fake-internet-defaults.js';
export type { FakeEchoServer, FakeInternetEvent, FakeInternetEventKind, FakeWebHost, FakeZone, FakeZoneEntry } from './fake-internet-types.js';
export { VethNamespace, type VethNamespaceSpec } from './veth-namespace.js';
export { queryDnsFrom, type DnsQueryOptions, type DnsQueryResult, type DnsQuestionSpec, type DnsRecordResult } from './dns-query.js';
export { probeFrom, pingFrom, type NetProbe, type NetProbeResult } from './net-probe.js';
