/**
 * The hello/ack handshake that opens every host connection over a virtio-serial port.
 *
 * Why it exists: over a virtio-serial port the agent cannot always see the host go away. QEMU tells the
 * guest only when its host-connected flag *changes*; a VM restored into a new QEMU process whose host is
 * already connected gets no event at all (`virtio_serial_post_load_timer_cb` in QEMU's
 * hw/char/virtio-serial-bus.c sends PORT_OPEN only if the saved and current flags differ). Bytes of the
 * earlier connection may also still be in flight in either direction (a frame half written when the
 * snapshot was taken). So every host connection starts with
 *
 *   host  -> agent  HELLO = ff ff ff ff 'R' 'M' 'F' 'H' + 8-byte random nonce
 *   agent -> host   ACK   = ff ff ff ff 'R' 'M' 'F' 'A' + the same nonce
 *
 * and after that the stream is the ordinary framing of `framing.ts`. 0xffffffff is not a valid frame
 * length (it exceeds `MAX_FRAME_BYTES`), so a marker at a frame boundary is never mistaken for a frame.
 * The host drops every byte before the ACK carrying its nonce (stale frames of an earlier connection);
 * the agent drops every byte before a HELLO, and a HELLO with a new nonce at a frame boundary ends the
 * current connection and starts a fresh one. Like qemu-guest-agent's `guest-sync-delimited` (a 0xff
 * sentinel that JSON cannot contain), the marker lets either side resynchronise without closing the port.
 * The socket transport (gVisor) has no handshake: a unix socket connection is fresh by construction.
 */
import { MAX_FRAME_BYTES } from './framing.js';

/** Size of a HELLO or ACK marker, in bytes. */
export const MARKER_BYTES = 16;
/** Size of the nonce at the end of a marker, in bytes. */
export const NONCE_BYTES = 8;
/** The length field that announces a marker instead of a frame (larger than any valid frame). */
export const MARKER_LENGTH_FIELD = 0xffffffff;

const HELLO_PREFIX = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x52, 0x4d, 0x46, 0x48]); // ....RMFH
const ACK_PREFIX = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x52, 0x4d, 0x46, 0x41]); // ....RMFA
if (MARKER_LENGTH_FIELD <= MAX_FRAME_BYTES) throw new Error('marker length field must exceed MAX_FRAME_BYTES');

/** Which side sent a marker: `hello` opens a connection (host), `ack` accepts it (agent). */
export type MarkerKind = 'hello' | 'ack';

function prefixOf(kind: MarkerKind): Buffer {
  return kind === 'hello' ? HELLO_PREFIX : ACK_PREFIX;
}

/**
 * The 16-byte marker of `kind` carrying `nonce`.
 * @throws RangeError when the nonce is not {@link NONCE_BYTES} long.
 */
export function encodeMarker(kind: MarkerKind, nonce: Uint8Array): Buffer {
  if (nonce.byteLength !== NONCE_BYTES) throw new RangeError(`nonce must be ${NONCE_BYTES} bytes, got ${nonce.byteLength}`);
  return Buffer.concat([prefixOf(kind), nonce]);
}

/** Read the marker in the first {@link MARKER_BYTES} of `bytes`: its kind and nonce, or undefined if none. */
export function parseMarker(bytes: Uint8Array): { kind: MarkerKind; nonce: Buffer } | undefined {
  if (bytes.byteLength < MARKER_BYTES) return undefined;
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, MARKER_BYTES);
  for (const kind of ['hello', 'ack'] as const) {
    if (b.subarray(0, HELLO_PREFIX.length).equals(prefixOf(kind))) return { kind, nonce: Buffer.from(b.subarray(HELLO_PREFIX.length)) };
  }
  return undefined;
}

/** What {@link MarkerScanner.push} found: the marker's nonce and the bytes after it in that chunk. */
export interface MarkerFound {
  nonce: Buffer;
  rest: Buffer;
}

/**
 * Finds the first marker of one kind (optionally with one given nonce) in a byte stream fed in
 * arbitrary chunks, discarding everything before it. A marker split across chunks is found.
 */
export class MarkerScanner {
  private readonly prefix: Buffer;
  /** Tail of the bytes seen so far that could still begin a marker. */
  private carry: Buffer = Buffer.alloc(0);

  constructor(kind: MarkerKind, private readonly nonce?: Uint8Array) {
    this.prefix = prefixOf(kind);
  }

  /** Feed the next chunk. @returns the marker once found (then stop feeding this scanner), else undefined. */
  push(chunk: Buffer): MarkerFound | undefined {
    const data = this.carry.byteLength ? Buffer.concat([this.carry, chunk]) : chunk;
    let from = 0;
    for (;;) {
      const at = data.indexOf(this.prefix, from);
      if (at < 0) break;
      if (data.byteLength - at < MARKER_BYTES) {
        this.carry = Buffer.from(data.subarray(at)); // A marker whose nonce has not arrived yet.
        return undefined;
      }
      const nonce = data.subarray(at + this.prefix.length, at + MARKER_BYTES);
      if (!this.nonce || nonce.equals(this.nonce)) {
        this.carry = Buffer.alloc(0);
        return { nonce: Buffer.from(nonce), rest: data.subarray(at + MARKER_BYTES) };
      }
      from = at + 1;
    }
    // Keep what could be the start of a prefix split across chunks.
    this.carry = Buffer.from(data.subarray(Math.max(0, data.byteLength - (this.prefix.length - 1))));
    return undefined;
  }
}
