/**
 * RTP packets (RFC 3550 §5.1): the 12-byte header, CSRCs, the header extension and padding. Encoding
 * writes what the pacer stamps; decoding reads what a trunk, a phone or sipp sends, and must survive
 * anything a UDP port receives: a datagram that is not RTP is a typed rejection, never an exception,
 * so the receive loop counts it and goes on. The payload of a decoded packet is a view into the
 * datagram, not a copy (one packet every 20 ms per call is not worth copying).
 */
import { randomBytes } from 'node:crypto';

export interface RtpPacket {
  /** 0-127. */
  payloadType: number;
  /** 0-65535, wrapping. */
  sequence: number;
  /** 32-bit, in the payload's clock (8000 Hz for G.711 and telephone-event). */
  timestamp: number;
  /** 32-bit synchronisation source. */
  ssrc: number;
  marker: boolean;
  /** Contributing sources (a mixer's); usually none. */
  csrcs: number[];
  payload: Uint8Array;
}

/** A packet to encode: the fields the sender chooses (no extension, no padding). */
export type RtpPacketFields = Omit<RtpPacket, 'csrcs' | 'marker'> & { csrcs?: number[]; marker?: boolean };

export type RtpRejection =
  /** Shorter than the fixed header. */
  | 'too-short'
  /** The version field is not 2 (an old RTP, STUN, or noise). */
  | 'not-version-2'
  /** An RTCP packet (payload type 72-76 with the marker bit, RFC 5761 §4) on the RTP port. */
  | 'rtcp'
  /** The CSRC list or the header extension runs past the end. */
  | 'truncated'
  /** The padding count is zero or larger than what follows the header. */
  | 'bad-padding';

export type RtpDecoding = { ok: true; packet: RtpPacket } | { ok: false; reason: RtpRejection };

const HEADER_BYTES = 12;
const VERSION = 2;

/** An RTP packet's bytes. Fields out of range are a caller's bug and throw a RangeError. */
export function encodeRtp(fields: RtpPacketFields): Uint8Array {
  const csrcs = fields.csrcs ?? [];
  checkInteger('payload type', fields.payloadType, 0x7f);
  checkInteger('sequence', fields.sequence, 0xffff);
  checkInteger('timestamp', fields.timestamp, 0xffffffff);
  checkInteger('SSRC', fields.ssrc, 0xffffffff);
  if (csrcs.length > 15) throw new RangeError('an RTP packet carries at most 15 CSRCs');
  for (const csrc of csrcs) checkInteger('CSRC', csrc, 0xffffffff);
  const headerBytes = HEADER_BYTES + 4 * csrcs.length;
  const bytes = new Uint8Array(headerBytes + fields.payload.length);
  const view = new DataView(bytes.buffer);
  view.setUint8(0, (VERSION << 6) | csrcs.length);
  view.setUint8(1, (fields.marker ? 0x80 : 0) | fields.payloadType);
  view.setUint16(2, fields.sequence);
  view.setUint32(4, fields.timestamp);
  view.setUint32(8, fields.ssrc);
  for (const [i, csrc] of csrcs.entries()) view.setUint32(HEADER_BYTES + 4 * i, csrc);
  bytes.set(fields.payload, headerBytes);
  return bytes;
}

/** The packet in a datagram, or why it is not one. Never throws. */
export function decodeRtp(data: Uint8Array): RtpDecoding {
  if (!(data instanceof Uint8Array) || data.length < HEADER_BYTES) return reject('too-short');
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const first = view.getUint8(0);
  if (first >> 6 !== VERSION) return reject('not-version-2');
  if (isRtcp(data)) return reject('rtcp');
  const hasPadding = (first & 0x20) !== 0;
  const hasExtension = (first & 0x10) !== 0;
  const csrcCount = first & 0x0f;
  let offset = HEADER_BYTES + 4 * csrcCount;
  if (offset > data.length) return reject('truncated');
  const csrcs: number[] = [];
  for (let i = 0; i < csrcCount; i++) csrcs.push(view.getUint32(HEADER_BYTES + 4 * i));
  if (hasExtension) {
    // §5.3.1: 16 bits defined by profile, 16 bits of length in 32-bit words, then the words.
    if (offset + 4 > data.length) return reject('truncated');
    offset += 4 + 4 * view.getUint16(offset + 2);
    if (offset > data.length) return reject('truncated');
  }
  let end = data.length;
  if (hasPadding) {
    // §5.1: the last octet counts the padding octets, itself included.
    const padding = view.getUint8(data.length - 1);
    if (padding === 0 || offset + padding > data.length) return reject('bad-padding');
    end -= padding;
  }
  const second = view.getUint8(1);
  return {
    ok: true,
    packet: {
      payloadType: second & 0x7f,
      marker: (second & 0x80) !== 0,
      sequence: view.getUint16(2),
      timestamp: view.getUint32(4),
      ssrc: view.getUint32(8),
      csrcs,
      payload: data.subarray(offset, end),
    },
  };
}

/**
 * Whether a datagram of version 2 is RTCP rather than RTP: its second byte is 192-223 (RFC 5761 §4,
 * the packet types SR 200 … APP 204 and their neighbours), which no RTP packet of ours uses.
 */
export function isRtcp(data: Uint8Array): boolean {
  return data.length >= 2 && data[0]! >> 6 === VERSION && data[1]! >= 192 && data[1]! <= 223;
}

/** The distance from sequence `a` to `b`, -32768…32767, across the 16-bit wrap. */
export function sequenceDistance(a: number, b: number): number {
  return ((((b - a) & 0xffff) + 0x8000) & 0xffff) - 0x8000;
}

/** A random 32-bit value: an SSRC, or the random start of the timestamp and sequence (RFC 3550 §5.1). */
export function randomUint32(): number {
  return randomBytes(4).readUInt32BE(0);
}

function reject(reason: RtpRejection): RtpDecoding {
  return { ok: false, reason };
}

function checkInteger(name: string, value: number, max: number): void {
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new RangeError(`RTP ${name} must be an integer 0-${max}, not ${value}`);
  }
}
