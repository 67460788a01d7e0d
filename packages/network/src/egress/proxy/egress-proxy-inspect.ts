/**
 * What the egress proxy reads from a connection before dialing anything: the server name a TLS
 * ClientHello asks for (SNI) or the Host of an HTTP/1.x request head. Pure functions over the bytes
 * received so far; each answers `more` (keep reading), `name` (done: the normalized name, possibly
 * null when the client named nothing usable) or `invalid` (close). Byte limits and timeouts are the
 * caller's: these functions only say whether the bytes so far are enough.
 *
 * The ClientHello parser is our own, small and strict (every length checked against its container).
 * `read-tls-client-hello` (npm) was tried and dropped: it decodes the SNI as 7-bit ASCII, so a name
 * with high-bit bytes aliases to another name (`caf\xe9.com` reads as `cafi.com`), and it only reads
 * from streams. Only a ClientHello that fits one TLS record is understood (mainstream clients send it
 * so); a fragmented one is `invalid`.
 */
import { isIP } from 'node:net';

/** Outcome of looking at the first bytes of a connection. */
export type InspectResult =
  | { state: 'more' }
  /** `name`: lowercase, no trailing dot, hostname characters only; null when absent, an IP literal or not a host name. */
  | { state: 'name'; name: string | null }
  | { state: 'invalid'; why: string };

const MORE: InspectResult = { state: 'more' };
const TLS_HANDSHAKE = 0x16;
const TLS_RECORD_HEADER = 5;
/** TLSPlaintext.length may not exceed 2^14 (RFC 8446 §5.1). */
const MAX_TLS_RECORD = 16384;
const HOST_NAME = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*$/;

/**
 * Normalize a name a client sent: lowercase, one trailing dot removed; null unless it is a plain
 * host name of at most 253 characters with labels of at most 63 (IP literals give null: the proxy
 * admits names, address rules are the firewall's business).
 */
export function normalizeClientName(raw: string): string | null {
  let name = raw.toLowerCase();
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name.length === 0 || name.length > 253 || isIP(name) !== 0) return null;
  if (!HOST_NAME.test(name) || name.split('.').some((label) => label.length > 63)) return null;
  return name;
}

/** Inspect the start of a TLS connection: the SNI host name of its ClientHello (first record). */
export function inspectTls(data: Buffer): InspectResult {
  if (data.length === 0) return MORE;
  if (data[0] !== TLS_HANDSHAKE) return { state: 'invalid', why: 'not a TLS handshake record' };
  if (data.length < TLS_RECORD_HEADER) return MORE;
  if (data[1] !== 0x03) return { state: 'invalid', why: `unsupported TLS record version ${data[1]}.${data[2]}` };
  const length = data.readUInt16BE(3);
  if (length === 0 || length > MAX_TLS_RECORD) return { state: 'invalid', why: `TLS record length ${length} out of range` };
  if (data.length < TLS_RECORD_HEADER + length) return MORE;
  const record = data.subarray(0, TLS_RECORD_HEADER + length);
  if (record[TLS_RECORD_HEADER] !== 0x01) return { state: 'invalid', why: 'first handshake message is not a ClientHello' };
  const declared = record.readUIntBE(TLS_RECORD_HEADER + 1, 3);
  if (declared + 4 > length) return { state: 'invalid', why: 'ClientHello does not fit in one TLS record' };
  try {
    const raw = serverNameOf(record.subarray(TLS_RECORD_HEADER + 4, TLS_RECORD_HEADER + 4 + declared));
    return { state: 'name', name: raw === null ? null : normalizeClientName(raw) };
  } catch (err) {
    return { state: 'invalid', why: `malformed ClientHello: ${(err as Error).message}` };
  }
}

/** Bounds-checked big-endian reads over one buffer; every read past the end throws. */
class Cursor {
  private offset = 0;
  constructor(private readonly data: Buffer) {}
  get remaining(): number {
    return this.data.length - this.offset;
  }
  take(n: number): Buffer {
    if (n > this.remaining) throw new Error(`needs ${n} bytes at offset ${this.offset}, ${this.remaining} left`);
    const out = this.data.subarray(this.offset, this.offset + n);
    this.offset += n;
    return out;
  }
  u8(): number {
    return this.take(1)[0]!;
  }
  u16(): number {
    return this.take(2).readUInt16BE(0);
  }
  /** A vector with a `lengthBytes`-byte length prefix, as its own cursor. */
  vector(lengthBytes: 1 | 2): Cursor {
    return new Cursor(this.take(lengthBytes === 1 ? this.u8() : this.u16()));
  }
}

/**
 * The host_name of the server_name extension (RFC 6066 §3) of a ClientHello body (after the 4-byte
 * handshake header), decoded as latin1 so that any non-ASCII byte fails the host name check instead of
 * aliasing to another name; null when there is no such extension or entry. Throws on any length that
 * does not fit, on trailing bytes, on a repeated extension and on an SNI list with two host names.
 */
function serverNameOf(body: Buffer): string | null {
  const hello = new Cursor(body);
  hello.take(2 + 32); // legacy_version, random
  hello.vector(1); // legacy_session_id
  if (hello.vector(2).remaining % 2 !== 0) throw new Error('odd cipher suite list');
  hello.vector(1); // legacy_compression_methods
  if (hello.remaining === 0) return null; // no extensions at all (allowed before TLS 1.2)
  const extensions = hello.vector(2);
  if (hello.remaining !== 0) throw new Error('bytes after the extensions');
  const seen = new Set<number>();
  let name: string | null = null;
  while (extensions.remaining > 0) {
    const type = extensions.u16();
    const data = extensions.vector(2);
    if (seen.has(type)) throw new Error(`extension ${type} repeated`);
    seen.add(type);
    if (type !== 0x0000) continue;
    const list = data.vector(2);
    if (data.remaining !== 0) throw new Error('bytes after the server name list');
    if (list.remaining === 0) throw new Error('empty server name list');
    while (list.remaining > 0) {
      const nameType = list.u8();
      const value = list.vector(2);
      if (nameType !== 0) continue; // not host_name
      if (name !== null) throw new Error('two host names in the server name list');
      name = value.take(value.remaining).toString('latin1');
    }
  }
  return name;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const REQUEST_LINE = /^([A-Z][A-Z0-9!#$%&'*+.^_`|~-]*) (\S+) HTTP\/1\.[01]$/;
const HEADER_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/;

/**
 * Inspect the start of an HTTP/1.x connection: the Host of its first request head (up to the blank
 * line). `invalid` for anything but a well-formed request line and header lines (bare LF, obsolete
 * line folding, control characters and NUL are refused), for two Host headers, for `CONNECT`, and
 * for an absolute-form target whose authority differs from Host. A head without Host, or with an IP Host,
 * gives `name: null`. A `:port` suffix on Host is ignored (the port is the connection's).
 */
export function inspectHttp(data: Buffer): InspectResult {
  const end = data.indexOf(HEAD_END);
  const scanned = data.subarray(0, end === -1 ? data.length : end + HEAD_END.length).toString('latin1');
  if (/(?:^|[^\r])\n/.test(scanned)) return { state: 'invalid', why: 'bare LF in request head' };
  if (end === -1) return looksLikeHttpSoFar(data) ? MORE : { state: 'invalid', why: 'not an HTTP/1.x request' };
  const head = data.subarray(0, end).toString('latin1');
  if (/[\0\x7f]|[\x01-\x08\x0a-\x1f]/.test(head.replaceAll('\r\n', ''))) return { state: 'invalid', why: 'control character in request head' };
  const lines = head.split('\r\n');
  const request = REQUEST_LINE.exec(lines[0]!);
  if (!request) return { state: 'invalid', why: 'malformed request line' };
  // A tunnel request would let an allowed host that happens to be a proxy reach any other.
  if (request[1] === 'CONNECT') return { state: 'invalid', why: 'CONNECT is not a request to an origin server' };
  const hosts: string[] = [];
  for (const line of lines.slice(1)) {
    const header = HEADER_LINE.exec(line);
    if (!header) return { state: 'invalid', why: 'malformed header line' };
    if (header[1]!.toLowerCase() === 'host') hosts.push(header[2]!);
  }
  if (hosts.length > 1) return { state: 'invalid', why: 'more than one Host header' };
  const host = hosts.length === 1 ? hostOf(hosts[0]!) : null;
  const target = request[2]!;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) {
    let authority: string | null;
    try {
      authority = new URL(target).hostname;
    } catch {
      return { state: 'invalid', why: 'malformed absolute request target' };
    }
    if (host === null || normalizeClientName(authority) !== host) return { state: 'invalid', why: 'request target names another host than Host' };
  }
  return { state: 'name', name: host };
}

/** The name part of a Host header value (`name[:port]`), normalized; null for IP literals and junk. */
function hostOf(value: string): string | null {
  const match = /^([^:[\]]+)(?::\d{1,5})?$/.exec(value);
  return match ? normalizeClientName(match[1]!) : null;
}

/** Cheap early reject: the bytes so far could still start an HTTP/1.x request line. */
function looksLikeHttpSoFar(data: Buffer): boolean {
  const firstLineEnd = data.indexOf('\r\n');
  const line = data.subarray(0, firstLineEnd === -1 ? Math.min(data.length, 64) : firstLineEnd).toString('latin1');
  const method = /^[A-Z]*/.exec(line)![0];
  if (method.length === line.length) return method.length <= 32;
  if (line[method.length] !== ' ' || method.length === 0) return false;
  return firstLineEnd === -1 || REQUEST_LINE.test(line);
}
