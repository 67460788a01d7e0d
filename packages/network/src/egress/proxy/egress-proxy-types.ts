/**
 * Vocabulary of the egress proxy: what it asks the daemon (who is this source, may it reach this
 * name on this port, where did the client mean to go, what does a name resolve to) and what it
 * reports (one decision per connection, for the egress log).
 */
import type { Socket } from 'node:net';

type MaybePromise<T> = T | Promise<T>;

/** The policy's verdict on a name and port; `rule` is the rule that decided (canonical spelling), for the log. */
export interface EgressProxyVerdict {
  allowed: boolean;
  rule: string | null;
}

/** The sandbox behind a source address, and its connection policy. */
export interface EgressProxySandbox {
  sandboxId: string;
  /** Verdict for `name` (lowercase ASCII, no trailing dot, never an IP literal) on TCP `port`. */
  allow(name: string, port: number): MaybePromise<EgressProxyVerdict>;
}

/** What a listener inspects: a TLS ClientHello (SNI) or an HTTP/1.x request head (Host). */
export type EgressProxyProtocol = 'tls' | 'http';

/** One listening socket; nftables redirects one original destination port to it. */
export interface EgressProxyListenerSpec {
  /** Address to bind (the host side the redirect targets). */
  address: string;
  /** Port to bind; `0` picks a free one (see the resolved value of {@link EgressProxy.listen}). */
  port: number;
  protocol: EgressProxyProtocol;
  /** The destination port the redirected connections were sent to (443, 80): policy port and upstream port. */
  originalPort: number;
}

/** Where the client meant to connect, before the redirect. */
export interface EgressOriginalDestination {
  address: string;
  port: number;
}

/** Why a connection ended up as it did. */
export type EgressProxyReason =
  /** The policy allowed the name; the proxy connected upstream. */
  | 'allowed'
  /** The policy denied the name on this port. */
  | 'policy'
  /** The source address belongs to no sandbox. */
  | 'unknown-source'
  /** `originalDestination` returned null. */
  | 'unknown-destination'
  /** No SNI / no Host, or one that is an IP literal or not a host name. */
  | 'no-name'
  /** Not a TLS ClientHello / not an HTTP/1.x request head. */
  | 'malformed'
  /** More than the byte limit before the name was known. */
  | 'too-large'
  /** The name was not known within `headerTimeoutMs`. */
  | 'timeout'
  /** `maxConnections` connections were already open. */
  | 'overloaded'
  /** The name resolved to nothing, or the resolver failed or timed out. */
  | 'resolve-failed'
  /** Every resolved address lies in a blocked range. */
  | 'blocked-address'
  /** No resolved address accepted a connection within `connectTimeoutMs`. */
  | 'connect-failed'
  /** A policy callback threw. */
  | 'error'
  /** An open connection was cut by {@link EgressProxy.revalidate} because the new policy denies it. */
  | 'revoked';

/**
 * One decision, reported once per connection (plus once more if {@link EgressProxy.revalidate} cuts it).
 * `verdict`: `allowed` (connected upstream), `denied` (refused by policy or by the checks before it),
 * `failed` (allowed, but resolving or connecting failed; the client was disconnected).
 */
export interface EgressProxyDecision {
  /** Null when the source address belongs to no sandbox (or the decision came before it was looked up). */
  sandboxId: string | null;
  /** Client source address. */
  source: string;
  /** Client source port (with `source`, ties the decision to the redirected connection). */
  sourcePort: number;
  /** SNI or Host (normalized); null when the client named nothing usable or was cut off before. */
  name: string | null;
  /** Policy/upstream port (the listener's original port, or the one `originalDestination` gave). */
  port: number;
  protocol: EgressProxyProtocol;
  verdict: 'allowed' | 'denied' | 'failed';
  reason: EgressProxyReason;
  /** The rule that decided, when the policy was asked. */
  rule: string | null;
  /** The address the proxy connected to (resolved from `name`); null when it connected nowhere. */
  destination: string | null;
  /** Where the client meant to go (from `originalDestination`); null when not known. */
  intended: EgressOriginalDestination | null;
  /** Human-readable detail for `malformed`, `resolve-failed`, `connect-failed` and `error`. */
  detail?: string;
}

export interface EgressProxyOptions {
  /** The sandbox a source address belongs to; null → connection closed (`unknown-source`). */
  policyForSource(address: string): MaybePromise<EgressProxySandbox | null>;
  /**
   * IPv4 addresses for an allowed name (the proxy dials the name, never the client's destination
   * address). Tried in order; addresses in `blockedRanges` are skipped.
   */
  resolve(name: string): Promise<string[]>;
  /** Called for every decision (not awaited; a throw is passed to `onError`). */
  onDecision(decision: EgressProxyDecision): void;
  /**
   * Where a redirected connection was headed, e.g. from a conntrack lookup of its 4-tuple (Node cannot
   * read `SO_ORIGINAL_DST`). Only its `port` matters to the proxy (policy and upstream port); the
   * address is reported as `intended` and never dialed. Null → closed (`unknown-destination`).
   * Default: port = the listener's `originalPort`, address unknown.
   */
  originalDestination?(socket: Socket, listener: EgressProxyListenerSpec): MaybePromise<EgressOriginalDestination | null>;
  /** Internal errors (socket errors after the decision, throwing `onDecision`). */
  onError?(error: unknown): void;
  /** IPv4 CIDRs never dialed; default {@link DEFAULT_BLOCKED_RANGES}. */
  blockedRanges?: readonly string[];
  /** Limit for the ClientHello / request head to arrive complete; default 10000 ms. */
  headerTimeoutMs?: number;
  /** Largest HTTP request head accepted, bytes (CRLFCRLF included); default 16384. */
  maxHttpHeadBytes?: number;
  /** Largest TLS record accepted for the ClientHello, bytes (5-byte header included); default 16389 (the TLS maximum). */
  maxClientHelloBytes?: number;
  /** Limit for `resolve` (and the policy callbacks) together; default 5000 ms. */
  resolveTimeoutMs?: number;
  /** Limit for one upstream connect attempt; default 5000 ms. */
  connectTimeoutMs?: number;
  /** Client connections open at once, over every listener (inspecting or piping); default 1024. */
  maxConnections?: number;
}

/** One connection being piped (see {@link EgressProxy.connections}). */
export interface EgressProxyConnection {
  sandboxId: string;
  source: string;
  name: string;
  port: number;
  destination: string;
  rule: string | null;
}
