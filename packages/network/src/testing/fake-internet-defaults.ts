/**
 * The fake internet's default servers and zone. Addresses are on documentation ranges; the defaults
 * avoid 192.0.2.0/24 because some test hosts sit on it (it appears only as answer data).
 */
import type { FakeEchoServer, FakeWebHost, FakeZone } from './fake-internet-types.js';

/** `203.0.113.10` serves two names; `203.0.113.20` one. HTTP on 80, HTTPS on 443. */
export const DEFAULT_FAKE_WEB_HOSTS: readonly FakeWebHost[] = [
  { address: '203.0.113.10', names: ['www.example.com', 'api.example.com'] },
  { address: '203.0.113.20', names: ['cdn.example.net'] },
];

/** A TCP echo on an arbitrary port. */
export const DEFAULT_FAKE_ECHO: readonly FakeEchoServer[] = [{ address: '198.51.100.7', port: 8080 }];

/** The scripted upstream DNS server (UDP and TCP). */
export const DEFAULT_FAKE_DNS = { address: '198.51.100.53', port: 53 } as const;

const MANY = Array.from({ length: 30 }, (_, i) => `198.51.100.${100 + i}`);

/**
 * Names for the common cases: plain answers, a CNAME, private and mixed answers, an AAAA-carrying
 * answer, a truncated-over-UDP answer, short/long TTLs, a slow and a failing name.
 */
export const DEFAULT_FAKE_ZONE: FakeZone = {
  'www.example.com': { a: ['203.0.113.10'], ttl: 300 },
  'api.example.com': { a: ['203.0.113.10'], ttl: 120 },
  'cdn.example.net': { a: ['203.0.113.20'], ttl: 300 },
  'echo.example.org': { a: ['198.51.100.7'], ttl: 300 },
  'alias.example.com': { cname: 'www.example.com', ttl: 600 },
  'doc.example.com': { a: ['192.0.2.10', '198.51.100.7', '203.0.113.5'], ttl: 300 },
  'private.example.com': { a: ['10.1.2.3', '172.16.0.1', '192.168.1.1', '127.0.0.1', '169.254.169.254', '100.64.0.1', '0.1.2.3'], ttl: 300 },
  'mixed.example.com': { a: ['10.1.2.3', '203.0.113.10', '169.254.169.254'], ttl: 300 },
  'dual.example.com': { a: ['203.0.113.10'], aaaa: ['2001:db8::10'], aaaaInAnswer: true, ttl: 300 },
  'big.example.com': { a: MANY, truncateUdp: true, ttl: 300 },
  'short.example.com': { a: ['203.0.113.10'], ttl: 1 },
  'long.example.com': { a: ['203.0.113.10'], ttl: 86400 },
  'slow.example.com': { a: ['203.0.113.10'], delayMs: 4000, ttl: 300 },
  'broken.example.com': { rcode: 'SERVFAIL' },
  'txt.example.com': { txt: ['v=hello'], ttl: 300 },
};
