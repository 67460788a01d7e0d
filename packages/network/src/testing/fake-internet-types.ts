/**
 * Shapes shared by the fake internet rig (test process) and its server script (inside the namespace).
 */

/** HTTP (and HTTPS) served on one address under one or more names. */
export interface FakeWebHost {
  address: string;
  /** Names the HTTPS certificate covers (every host shares one self-signed certificate). */
  names: string[];
  /** Default 80. */
  httpPort?: number;
  /** Default 443. */
  httpsPort?: number;
}

/** A TCP echo server. */
export interface FakeEchoServer {
  address: string;
  port: number;
}

/** What the scripted DNS server answers for one name (exact match, case-insensitive). */
export interface FakeZoneEntry {
  a?: string[];
  aaaa?: string[];
  /** Answer a CNAME to this name, followed by the target's records when the target is in the zone. */
  cname?: string;
  txt?: string[];
  /** Seconds; default 300. */
  ttl?: number;
  /** Also put the AAAA records into the answer to an A query (a misbehaving upstream). */
  aaaaInAnswer?: boolean;
  /** Over UDP answer with TC set and no records, so the client must retry over TCP. */
  truncateUdp?: boolean;
  /** Answer this much later. */
  delayMs?: number;
  /** Answer with this RCODE and no records. */
  rcode?: 'SERVFAIL' | 'REFUSED' | 'NXDOMAIN';
}

/** name → entry; a name not in the zone is NXDOMAIN. */
export type FakeZone = Record<string, FakeZoneEntry>;

/** Configuration handed to the server script (a JSON file). */
export interface FakeInternetServerConfig {
  web: Array<Required<FakeWebHost>>;
  echo: FakeEchoServer[];
  dns: { address: string; port: number };
  zone: FakeZone;
  tls: { certPem: string; keyPem: string };
}

interface Endpoints {
  /** Connection number, unique per rig start; ties connection, TLS, request and close events together. */
  conn: number;
  local: string;
  localPort: number;
  remote: string;
  remotePort: number;
  /** `Date.now()` in the server process. */
  at: number;
}

/** Something that reached the fake internet. */
export type FakeInternetEvent =
  | (Endpoints & { kind: 'connection'; service: 'http' | 'https' | 'echo' })
  /** One per HTTPS connection: after the handshake, or at close when it never completed (`failed`). */
  | (Endpoints & { kind: 'tls'; sni: string | null; outcome: 'handshake' | 'failed'; error?: string })
  | (Endpoints & { kind: 'http-request'; service: 'http' | 'https'; method: string; path: string; host: string | null; sni: string | null })
  | (Endpoints & { kind: 'connection-closed'; service: 'http' | 'https' | 'echo'; bytesIn: number; bytesOut: number })
  | (Omit<Endpoints, 'conn'> & { kind: 'dns-query'; transport: 'udp' | 'tcp'; name: string; type: string });

export type FakeInternetEventKind = FakeInternetEvent['kind'];
