/**
 * Thin typed layer over `dns-packet` (which does all the wire encoding): the header fields its type
 * declarations omit, response building, TCP framing and name checks.
 */
import * as dnsPacket from 'dns-packet';
import type { Answer, Packet, Question } from 'dns-packet';

export type { Answer, Question };

/** RCODE numbers (RFC 1035 §4.1.1) used by the resolver. */
export const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
export type Rcode = keyof typeof RCODE;

/** A decoded message with the header fields `dns-packet` returns but does not declare. */
export interface DnsMessage {
  id: number;
  isResponse: boolean;
  /** Raw header flag bits (without QR), as `dns-packet` gives them. */
  flags: number;
  opcode: string;
  /** Name of the RCODE, e.g. `NOERROR`, `NXDOMAIN`, `RCODE_11`. */
  rcode: string;
  truncated: boolean;
  questions: Question[];
  answers: Answer[];
  authorities: Answer[];
  additionals: Answer[];
}

/** Decode one message. Throws (the library's `Error`) on malformed input. */
export function decodeMessage(buf: Buffer): DnsMessage {
  const p = dnsPacket.decode(buf) as dnsPacket.DecodedPacket & { opcode?: string; rcode?: string };
  return {
    id: p.id ?? 0,
    isResponse: p.type === 'response',
    flags: p.flags ?? 0,
    opcode: p.opcode ?? 'QUERY',
    rcode: p.rcode ?? 'NOERROR',
    truncated: p.flag_tc,
    questions: p.questions ?? [],
    answers: p.answers ?? [],
    authorities: p.authorities ?? [],
    additionals: p.additionals ?? [],
  };
}

/** EDNS(0) OPT record advertising `udpPayloadSize` bytes. */
export function optRecord(udpPayloadSize: number): Answer {
  return { type: 'OPT', name: '.', udpPayloadSize, extendedRcode: 0, ednsVersion: 0, flags: 0, flag_do: false, options: [] } as Answer;
}

/** The OPT record of a message, if any. */
export function findOpt(message: DnsMessage): (Answer & { udpPayloadSize: number }) | undefined {
  return message.additionals.find((a): a is Answer & { udpPayloadSize: number } => a.type === 'OPT');
}

/** A recursive query for one question, EDNS(0) with a 1232-byte UDP size. */
export function encodeQuery(id: number, question: Question): Buffer {
  const packet: Packet = {
    type: 'query',
    id,
    flags: dnsPacket.RECURSION_DESIRED,
    questions: [question],
    additionals: [optRecord(1232)],
  };
  return dnsPacket.encode(packet);
}

export interface ReplyContent {
  rcode: Rcode;
  answers?: Answer[];
  authorities?: Answer[];
  truncated?: boolean;
  /** Leave the question section out (when the question itself could not be understood). */
  omitQuestion?: boolean;
}

/**
 * Encode the reply to `query`: same id and question, RD copied, RA set, and an OPT record when the
 * query carried one.
 */
export function encodeReply(query: DnsMessage, content: ReplyContent): Buffer {
  const flags = (query.flags & dnsPacket.RECURSION_DESIRED) | dnsPacket.RECURSION_AVAILABLE
    | (content.truncated ? dnsPacket.TRUNCATED_RESPONSE : 0) | RCODE[content.rcode];
  return dnsPacket.encode({
    type: 'response',
    id: query.id,
    flags,
    questions: content.omitQuestion ? [] : query.questions,
    answers: content.answers ?? [],
    authorities: content.authorities ?? [],
    additionals: findOpt(query) ? [optRecord(1232)] : [],
  });
}

/** Encode a reply with only a header (id and rcode), for queries whose body could not be decoded far enough. */
export function encodeBareReply(id: number, rcode: Rcode): Buffer {
  return dnsPacket.encode({ type: 'response', id, flags: dnsPacket.RECURSION_AVAILABLE | RCODE[rcode], questions: [], answers: [] });
}

/** The UDP payload limit a query allows its reply: 512 bytes, or its EDNS size (capped at 4096). */
export function udpLimitFor(query: DnsMessage): number {
  const opt = findOpt(query);
  return opt ? Math.min(4096, Math.max(512, opt.udpPayloadSize)) : 512;
}

/** Prefix `message` with its 2-byte length (RFC 7766 TCP framing). */
export function frameForTcp(message: Buffer): Buffer {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(message.length);
  return Buffer.concat([len, message]);
}

/**
 * Split complete length-prefixed messages off the front of `buffer`; returns them and the rest.
 */
export function takeTcpFrames(buffer: Buffer): { frames: Buffer[]; rest: Buffer } {
  const frames: Buffer[] = [];
  let offset = 0;
  while (buffer.length - offset >= 2) {
    const len = buffer.readUInt16BE(offset);
    if (buffer.length - offset - 2 < len) break;
    frames.push(buffer.subarray(offset + 2, offset + 2 + len));
    offset += 2 + len;
  }
  return { frames, rest: buffer.subarray(offset) };
}

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,62})$/;

/**
 * Normalize a question name (lower case, no trailing dot) and check it is a plain hostname: labels of
 * letters, digits, `-` and `_`, at most 63 bytes each and 253 in all. Returns null otherwise
 * (binary labels, dots inside labels after decoding, wildcards, empty labels).
 * The resolver checks policy on this string and re-encodes the upstream query from it, so what is
 * checked is exactly what is asked upstream.
 */
export function normalizeName(name: string): string | null {
  const n = name.toLowerCase().replace(/\.$/, '');
  if (n.length === 0 || n.length > 253) return null;
  return n.split('.').every((label) => LABEL.test(label)) ? n : null;
}
