/**
 * The RTCP a call needs (RFC 3550 §6): our periodic compound report (a sender report while we send,
 * else a receiver report, each followed by SDES with our CNAME, as §6.1 requires of every compound
 * packet), the BYE on hang-up, and enough reading of the far end's SR/RR to learn how our audio
 * arrives (fraction and number lost, jitter) and the times that give the round trip. Trunks and
 * session border controllers watch for RTCP to judge a stream alive; nothing more is needed from it
 * for G.711 calls. Reading never throws: a datagram that is not RTCP is a rejection with a reason.
 */

/** One reception report block (§6.4.1): how the reporter receives the stream of `ssrc`. */
export interface ReportBlock {
  ssrc: number;
  /** Fraction of packets lost since the previous report, 0-255 (a fixed point of 8 bits). */
  fractionLost: number;
  /** Packets lost since the start, signed 24-bit (duplicates can make it negative). */
  cumulativeLost: number;
  /** The highest sequence received, with the count of wraps in the upper 16 bits. */
  extendedHighestSequence: number;
  /** Interarrival jitter in timestamp units. */
  jitter: number;
  /** The middle 32 bits of the NTP time of the last SR received from `ssrc` (0 if none). */
  lastSenderReport: number;
  /** Delay since that SR, in 1/65536 s (0 if none). */
  delaySinceLastSenderReport: number;
}

export interface SenderInfo {
  /** Wall-clock time of the report, Unix ms (written as NTP). */
  ntpMs: number;
  /** The RTP timestamp that corresponds to the same instant. */
  rtpTimestamp: number;
  packetCount: number;
  /** Payload octets sent. */
  octetCount: number;
}

export type RtcpPacket =
  | { type: 'sr'; ssrc: number; sender: SenderInfo & { ntpMiddle: number }; reports: ReportBlock[] }
  | { type: 'rr'; ssrc: number; reports: ReportBlock[] }
  | { type: 'sdes'; chunks: { ssrc: number; cname?: string }[] }
  | { type: 'bye'; ssrcs: number[]; reason?: string }
  | { type: 'other'; packetType: number };

export type RtcpRejection = 'too-short' | 'not-version-2' | 'truncated' | 'not-rtcp';
export type RtcpDecoding = { ok: true; packets: RtcpPacket[] } | { ok: false; reason: RtcpRejection };

/** What a receiver has counted of one stream: the figures a report block is made from. */
export interface ReceptionCounts {
  ssrc: number;
  /** The extended sequence of the first packet (the lowest received). */
  baseSequence: number;
  /** The highest extended sequence received. */
  highestSequence: number;
  /** Packets received, late and duplicated ones included (RFC 3550 A.3). */
  received: number;
  /** Interarrival jitter, timestamp units. */
  jitter: number;
}

const SR = 200;
const RR = 201;
const SDES = 202;
const BYE = 203;
const CNAME = 1;
/** Seconds from 1900 (NTP's era) to 1970 (Unix). */
const NTP_UNIX_OFFSET = 2_208_988_800;
const MAX_BLOCKS = 31;

/** A compound report: SR (with `sender`) or RR, then SDES with our CNAME. */
export function encodeRtcpReport(report: {
  ssrc: number;
  cname: string;
  sender?: SenderInfo;
  reports?: ReportBlock[];
}): Uint8Array {
  return Buffer.concat([
    senderOrReceiverReport(report.ssrc, report.sender, report.reports ?? []),
    sdes(report),
  ]);
}

/** The compound packet that says we leave: RR (or SR), SDES with our CNAME, then BYE (§6.6). */
export function encodeRtcpBye(bye: {
  ssrc: number;
  cname: string;
  sender?: SenderInfo;
  reason?: string;
}): Uint8Array {
  const reason = bye.reason === undefined ? new Uint8Array(0) : text(bye.reason);
  const body = new Uint8Array(4 + (reason.length > 0 ? padded(1 + reason.length) : 0));
  new DataView(body.buffer).setUint32(0, bye.ssrc);
  if (reason.length > 0) {
    body[4] = reason.length;
    body.set(reason, 5);
  }
  return Buffer.concat([senderOrReceiverReport(bye.ssrc, bye.sender, []), sdes(bye), packet(BYE, 1, body)]);
}

/** A report block from a receiver's counts now and at the previous report (for the fraction lost). */
export function reportBlock(
  now: ReceptionCounts,
  previous: ReceptionCounts | undefined,
  lastSenderReport = { middle: 0, delay: 0 },
): ReportBlock {
  const expected = now.highestSequence - now.baseSequence + 1;
  const lost = expected - now.received;
  // A.3: the fraction is over the interval since the last report, never negative.
  const expectedBefore = previous ? previous.highestSequence - previous.baseSequence + 1 : 0;
  const expectedInterval = expected - expectedBefore;
  const lostInterval = expectedInterval - (now.received - (previous?.received ?? 0));
  const fractionLost =
    expectedInterval <= 0 || lostInterval <= 0
      ? 0
      : Math.min(255, Math.floor((lostInterval * 256) / expectedInterval));
  return {
    ssrc: now.ssrc,
    fractionLost,
    cumulativeLost: Math.max(-0x800000, Math.min(0x7fffff, lost)),
    extendedHighestSequence: ((now.highestSequence % 2 ** 32) + 2 ** 32) % 2 ** 32,
    jitter: Math.min(0xffffffff, Math.round(now.jitter)),
    lastSenderReport: lastSenderReport.middle,
    delaySinceLastSenderReport: lastSenderReport.delay,
  };
}

/** The packets of a compound RTCP datagram, or why it is not one. Never throws. */
export function decodeRtcp(data: Uint8Array): RtcpDecoding {
  if (!(data instanceof Uint8Array) || data.length < 4) return { ok: false, reason: 'too-short' };
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const packets: RtcpPacket[] = [];
  for (let offset = 0; offset < data.length; ) {
    if (offset + 4 > data.length) return { ok: false, reason: 'truncated' };
    const first = view.getUint8(offset);
    if (first >> 6 !== 2) return { ok: false, reason: 'not-version-2' };
    const packetType = view.getUint8(offset + 1);
    if (packetType < 192 || packetType > 223) return { ok: false, reason: 'not-rtcp' };
    const size = (view.getUint16(offset + 2) + 1) * 4;
    if (offset + size > data.length) return { ok: false, reason: 'truncated' };
    const read = readPacket(
      new DataView(data.buffer, data.byteOffset + offset, size),
      first & 0x1f,
      packetType,
    );
    if (!read) return { ok: false, reason: 'truncated' };
    packets.push(read);
    offset += size;
  }
  return { ok: true, packets };
}

/** The middle 32 bits of an NTP time (what an RR's LSR field echoes), from Unix ms. */
export function ntpMiddle(unixMs: number): number {
  return middle32(...ntpTime(unixMs));
}

function middle32(seconds: number, fraction: number): number {
  return (((seconds & 0xffff) << 16) | (fraction >>> 16)) >>> 0;
}

// --- writing ------------------------------------------------------------------------------------

function senderOrReceiverReport(
  ssrc: number,
  sender: SenderInfo | undefined,
  reports: ReportBlock[],
): Uint8Array {
  if (reports.length > MAX_BLOCKS) throw new RangeError(`an RTCP report holds at most ${MAX_BLOCKS} blocks`);
  const infoBytes = sender ? 20 : 0;
  const body = new Uint8Array(4 + infoBytes + 24 * reports.length);
  const view = new DataView(body.buffer);
  view.setUint32(0, ssrc);
  if (sender) {
    const [seconds, fraction] = ntpTime(sender.ntpMs);
    view.setUint32(4, seconds);
    view.setUint32(8, fraction);
    view.setUint32(12, sender.rtpTimestamp >>> 0);
    view.setUint32(16, sender.packetCount >>> 0);
    view.setUint32(20, sender.octetCount >>> 0);
  }
  reports.forEach((block, i) => {
    const at = 4 + infoBytes + 24 * i;
    view.setUint32(at, block.ssrc);
    view.setUint32(at + 4, ((block.fractionLost & 0xff) << 24) | (block.cumulativeLost & 0xffffff));
    view.setUint32(at + 8, block.extendedHighestSequence >>> 0);
    view.setUint32(at + 12, block.jitter >>> 0);
    view.setUint32(at + 16, block.lastSenderReport >>> 0);
    view.setUint32(at + 20, block.delaySinceLastSenderReport >>> 0);
  });
  return packet(sender ? SR : RR, reports.length, body);
}

/** SDES with one chunk: our SSRC and CNAME, ended by a null item and padded to 32 bits (§6.5). */
function sdes(source: { ssrc: number; cname: string }): Uint8Array {
  const cname = text(source.cname);
  const body = new Uint8Array(padded(4 + 2 + cname.length + 1));
  new DataView(body.buffer).setUint32(0, source.ssrc);
  body[4] = CNAME;
  body[5] = cname.length;
  body.set(cname, 6);
  return packet(SDES, 1, body);
}

/** One RTCP packet: the common header (§6.4.1) before a body that is a multiple of 4 bytes. */
function packet(packetType: number, count: number, body: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(4 + body.length);
  const view = new DataView(bytes.buffer);
  view.setUint8(0, (2 << 6) | count);
  view.setUint8(1, packetType);
  view.setUint16(2, bytes.length / 4 - 1);
  bytes.set(body, 4);
  return bytes;
}

/** UTF-8 text of at most 255 bytes (an SDES item's or a BYE reason's length is one octet). */
function text(value: string): Uint8Array {
  const bytes = new TextEncoder().encode(value);
  return bytes.length > 255 ? bytes.subarray(0, 255) : bytes;
}

function padded(length: number): number {
  return Math.ceil(length / 4) * 4;
}

function ntpTime(unixMs: number): [seconds: number, fraction: number] {
  const seconds = Math.floor(unixMs / 1000);
  const fraction = Math.floor(((unixMs - seconds * 1000) / 1000) * 2 ** 32);
  return [(seconds + NTP_UNIX_OFFSET) >>> 0, fraction >>> 0];
}

// --- reading ------------------------------------------------------------------------------------

/** One packet of a compound datagram (`view` spans exactly its length), or undefined if it is short. */
function readPacket(view: DataView, count: number, packetType: number): RtcpPacket | undefined {
  if (packetType === SR || packetType === RR) {
    const infoBytes = packetType === SR ? 20 : 0;
    if (view.byteLength < 8 + infoBytes + 24 * count) return undefined;
    const ssrc = view.getUint32(4);
    const reports = Array.from({ length: count }, (_, i) => readBlock(view, 8 + infoBytes + 24 * i));
    if (packetType === RR) return { type: 'rr', ssrc, reports };
    const seconds = view.getUint32(8);
    const fraction = view.getUint32(12);
    const sender = {
      ntpMs: (seconds - NTP_UNIX_OFFSET) * 1000 + (fraction / 2 ** 32) * 1000,
      ntpMiddle: middle32(seconds, fraction),
      rtpTimestamp: view.getUint32(16),
      packetCount: view.getUint32(20),
      octetCount: view.getUint32(24),
    };
    return { type: 'sr', ssrc, sender, reports };
  }
  if (packetType === SDES) return readSdes(view, count);
  if (packetType === BYE) {
    if (view.byteLength < 4 + 4 * count) return undefined;
    const ssrcs = Array.from({ length: count }, (_, i) => view.getUint32(4 + 4 * i));
    const at = 4 + 4 * count;
    if (at < view.byteLength) {
      const length = view.getUint8(at);
      if (at + 1 + length > view.byteLength) return undefined;
      const reason = new TextDecoder().decode(new Uint8Array(view.buffer, view.byteOffset + at + 1, length));
      return { type: 'bye', ssrcs, reason };
    }
    return { type: 'bye', ssrcs };
  }
  return { type: 'other', packetType };
}

function readBlock(view: DataView, at: number): ReportBlock {
  const lossWord = view.getUint32(at + 4);
  const cumulative = lossWord & 0xffffff;
  return {
    ssrc: view.getUint32(at),
    fractionLost: lossWord >>> 24,
    cumulativeLost: cumulative & 0x800000 ? cumulative - 0x1000000 : cumulative,
    extendedHighestSequence: view.getUint32(at + 8),
    jitter: view.getUint32(at + 12),
    lastSenderReport: view.getUint32(at + 16),
    delaySinceLastSenderReport: view.getUint32(at + 20),
  };
}

/** SDES chunks: each an SSRC, items (type, length, text) up to a null octet, padded to 32 bits. */
function readSdes(view: DataView, count: number): RtcpPacket | undefined {
  const chunks: { ssrc: number; cname?: string }[] = [];
  let at = 4;
  for (let i = 0; i < count; i++) {
    if (at + 4 > view.byteLength) return undefined;
    const chunk: { ssrc: number; cname?: string } = { ssrc: view.getUint32(at) };
    at += 4;
    for (;;) {
      if (at >= view.byteLength) return undefined;
      const itemType = view.getUint8(at);
      if (itemType === 0) break;
      if (at + 2 > view.byteLength) return undefined;
      const length = view.getUint8(at + 1);
      if (at + 2 + length > view.byteLength) return undefined;
      if (itemType === CNAME) {
        chunk.cname = new TextDecoder().decode(new Uint8Array(view.buffer, view.byteOffset + at + 2, length));
      }
      at += 2 + length;
    }
    at = padded(at + 1);
    chunks.push(chunk);
  }
  return { type: 'sdes', chunks };
}
