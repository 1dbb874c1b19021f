/**
 * RTP for the SIP trunk: packets (src/sip/rtp.ts) round trip, and any datagram decodes to a packet
 * or a typed rejection without throwing; RTCP reports (rtcp.ts) are read back field for field; RFC
 * 4733 key events (rtp-events.ts) go out as the RFC's packet sequence and come back as each key
 * exactly once, through the real pacer and decoder.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeRtcp, encodeRtcpBye, encodeRtcpReport, ntpMiddle, reportBlock } from '../src/sip/rtcp.js';
import { decodeRtp, encodeRtp, isRtcp, type RtpPacket, sequenceDistance } from '../src/sip/rtp.js';
import {
  decodeTelephoneEvent,
  encodeTelephoneEvent,
  eventKey,
  KeyReceiver,
  KeySender,
  keyEvent,
  keyFrames,
} from '../src/sip/rtp-events.js';
import { type PacerFrame, RtpPacer } from '../src/sip/rtp-pacer.js';
import { MULAW_8K, silence } from '../src/voice/audio.js';
import { FakeTimers } from './support/fake-timers.js';

const REJECTIONS = ['too-short', 'not-version-2', 'rtcp', 'truncated', 'bad-padding'];

function decoded(bytes: Uint8Array): RtpPacket {
  const result = decodeRtp(bytes);
  if (!result.ok) throw new Error(`rejected: ${result.reason}`);
  return result.packet;
}

describe('RTP packets', () => {
  it('writes the RFC 3550 header', () => {
    const bytes = encodeRtp({
      payloadType: 8,
      sequence: 0x1234,
      timestamp: 0xdeadbeef,
      ssrc: 0x01020304,
      marker: true,
      payload: Uint8Array.of(0xd5, 0xd5, 0x55),
    });
    expect([...bytes]).toEqual([
      0x80, 0x88, 0x12, 0x34, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 0xd5, 0xd5, 0x55,
    ]);
  });

  it('reads past CSRCs and a header extension, and drops the padding', () => {
    const bytes = Uint8Array.of(
      0xb2, // V=2, P=1, X=1, CC=2
      0x00, // M=0, PT=0
      0xff,
      0xff, // sequence 65535
      0,
      0,
      0x01,
      0x40, // timestamp 320
      0xca,
      0xfe,
      0xba,
      0xbe, // SSRC
      0,
      0,
      0,
      7, // CSRC 7
      0,
      0,
      0,
      9, // CSRC 9
      0xbe,
      0xde,
      0,
      1, // extension: profile 0xBEDE, one word
      0x10,
      0xaa,
      0,
      0, // the word
      0x7f,
      0x7e, // payload
      0,
      0,
      3, // three octets of padding
    );
    expect(decoded(bytes)).toEqual({
      payloadType: 0,
      marker: false,
      sequence: 65535,
      timestamp: 320,
      ssrc: 0xcafebabe,
      csrcs: [7, 9],
      payload: Uint8Array.of(0x7f, 0x7e),
    });
  });

  it('rejects, with a reason, what is not an RTP packet', () => {
    const good = encodeRtp({
      payloadType: 0,
      sequence: 1,
      timestamp: 2,
      ssrc: 3,
      payload: new Uint8Array(4),
    });
    expect(decodeRtp(good.subarray(0, 11))).toEqual({ ok: false, reason: 'too-short' });
    expect(decodeRtp(Uint8Array.of(0x40, ...good.subarray(1)))).toEqual({
      ok: false,
      reason: 'not-version-2',
    });
    // A STUN binding request (first two bits 0) on the media port.
    expect(
      decodeRtp(Uint8Array.of(0, 1, 0, 0, 0x21, 0x12, 0xa4, 0x42, 1, 2, 3, 4, 5, 6, 7, 8)),
    ).toMatchObject({
      reason: 'not-version-2',
    });
    expect(decodeRtp(Uint8Array.of(0x8f, ...good.subarray(1)))).toEqual({ ok: false, reason: 'truncated' });
    // An extension header needs 4 bytes; 2 follow the fixed header.
    expect(decodeRtp(Uint8Array.of(0x90, ...good.subarray(1, 14)))).toEqual({
      ok: false,
      reason: 'truncated',
    });
    const zeroPadding = Uint8Array.of(0xa0, ...good.subarray(1, 15), 0);
    expect(decodeRtp(zeroPadding)).toEqual({ ok: false, reason: 'bad-padding' });
    const tooMuchPadding = Uint8Array.of(0xa0, ...good.subarray(1, 15), 9);
    expect(decodeRtp(tooMuchPadding)).toEqual({ ok: false, reason: 'bad-padding' });
    const report = encodeRtcpReport({ ssrc: 5, cname: 'a@b' });
    expect(isRtcp(report)).toBe(true);
    expect(isRtcp(good)).toBe(false);
    expect(decodeRtp(report)).toEqual({ ok: false, reason: 'rtcp' });
  });

  it('refuses to write fields out of range', () => {
    const base = { payloadType: 0, sequence: 0, timestamp: 0, ssrc: 0, payload: new Uint8Array(0) };
    expect(() => encodeRtp({ ...base, payloadType: 128 })).toThrow(RangeError);
    expect(() => encodeRtp({ ...base, sequence: 65536 })).toThrow(RangeError);
    expect(() => encodeRtp({ ...base, timestamp: -1 })).toThrow(RangeError);
    expect(() => encodeRtp({ ...base, ssrc: 1.5 })).toThrow(RangeError);
    expect(() => encodeRtp({ ...base, csrcs: new Array(16).fill(1) })).toThrow(RangeError);
  });

  it('measures sequence distances across the wrap', () => {
    expect(sequenceDistance(65535, 0)).toBe(1);
    expect(sequenceDistance(0, 65535)).toBe(-1);
    expect(sequenceDistance(65000, 300)).toBe(836);
    expect(sequenceDistance(10, 10)).toBe(0);
  });

  it('round trips any packet (property)', () => {
    const packet = fc.record({
      payloadType: fc.integer({ min: 0, max: 127 }),
      sequence: fc.integer({ min: 0, max: 0xffff }),
      timestamp: fc.integer({ min: 0, max: 0xffffffff }),
      ssrc: fc.integer({ min: 0, max: 0xffffffff }),
      marker: fc.boolean(),
      csrcs: fc.array(fc.integer({ min: 0, max: 0xffffffff }), { maxLength: 15 }),
      payload: fc.uint8Array({ maxLength: 400 }),
    });
    fc.assert(
      fc.property(packet, (fields) => {
        const result = decodeRtp(encodeRtp(fields));
        // RFC 5761 §4: with the marker set, payload types 64-95 look like RTCP (and are avoided).
        if (fields.marker && fields.payloadType >= 64 && fields.payloadType <= 95) {
          expect(result).toEqual({ ok: false, reason: 'rtcp' });
        } else {
          expect(result).toEqual({ ok: true, packet: fields });
        }
      }),
      { numRuns: 500 },
    );
  });

  it('never throws on garbage, nor on damaged packets (property)', () => {
    const check = (bytes: Uint8Array) => {
      const result = decodeRtp(bytes);
      if (result.ok) {
        expect(result.packet.payload.length).toBeLessThanOrEqual(bytes.length - 12);
      } else {
        expect(REJECTIONS).toContain(result.reason);
      }
    };
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), check), { numRuns: 2000 });
    const damaged = fc
      .tuple(
        fc.uint8Array({ minLength: 0, maxLength: 60 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
        fc.nat(),
      )
      .map(([payload, flips, cut]) => {
        const bytes = encodeRtp({ payloadType: 0, sequence: 1, timestamp: 2, ssrc: 3, payload }).slice();
        for (const [at, value] of flips) bytes[at % bytes.length] = value;
        return bytes.subarray(0, bytes.length - (cut % 4));
      });
    fc.assert(fc.property(damaged, check), { numRuns: 2000 });
  });
});

describe('RTCP', () => {
  const block = {
    ssrc: 0x11223344,
    fractionLost: 25,
    cumulativeLost: 5,
    extendedHighestSequence: 0x0001_00c7,
    jitter: 37,
    lastSenderReport: 0xabcd1234,
    delaySinceLastSenderReport: 65536,
  };

  it('writes a sender report and our CNAME in one compound packet, and reads it back', () => {
    const ntpMs = Date.UTC(2026, 10, 27, 12, 0, 0, 250);
    const bytes = encodeRtcpReport({
      ssrc: 0xcafe,
      cname: 'switchboard@192.0.2.10',
      sender: { ntpMs, rtpTimestamp: 123456, packetCount: 1500, octetCount: 240000 },
      reports: [block],
    });
    expect(bytes.length % 4).toBe(0);
    const read = decodeRtcp(bytes);
    expect(read).toEqual({
      ok: true,
      packets: [
        {
          type: 'sr',
          ssrc: 0xcafe,
          sender: {
            ntpMs: expect.closeTo(ntpMs, 3),
            ntpMiddle: ntpMiddle(ntpMs),
            rtpTimestamp: 123456,
            packetCount: 1500,
            octetCount: 240000,
          },
          reports: [block],
        },
        { type: 'sdes', chunks: [{ ssrc: 0xcafe, cname: 'switchboard@192.0.2.10' }] },
      ],
    });
  });

  it('writes a receiver report while we do not send, with a negative loss (duplicates)', () => {
    const read = decodeRtcp(
      encodeRtcpReport({ ssrc: 1, cname: 'abcd', reports: [{ ...block, cumulativeLost: -3 }] }),
    );
    expect(read).toMatchObject({
      ok: true,
      packets: [
        { type: 'rr', ssrc: 1, reports: [{ ...block, cumulativeLost: -3 }] },
        { type: 'sdes', chunks: [{ ssrc: 1, cname: 'abcd' }] },
      ],
    });
  });

  it('says goodbye after a report and the CNAME', () => {
    const bytes = encodeRtcpBye({ ssrc: 9, cname: 'x', reason: 'hung up' });
    expect(bytes.length % 4).toBe(0);
    expect(decodeRtcp(bytes)).toEqual({
      ok: true,
      packets: [
        { type: 'rr', ssrc: 9, reports: [] },
        { type: 'sdes', chunks: [{ ssrc: 9, cname: 'x' }] },
        { type: 'bye', ssrcs: [9], reason: 'hung up' },
      ],
    });
  });

  it('reads the loss and jitter a far end reports about our stream (RFC 3550 §6.4.2 layout)', () => {
    const rr = Uint8Array.of(
      ...[0x81, 201, 0, 7], // RR, one block, 8 words
      ...[0x0a, 0x0b, 0x0c, 0x0d], // reporter
      ...[0x00, 0x00, 0xca, 0xfe], // about our SSRC
      ...[0x40, 0xff, 0xff, 0xfe], // fraction 64/256, cumulative -2
      ...[0x00, 0x02, 0x00, 0x10], // two wraps, sequence 16
      ...[0, 0, 0x01, 0x00], // jitter 256 (32 ms at 8 kHz)
      ...[0, 0, 0, 0],
      ...[0, 0, 0, 0],
    );
    expect(decodeRtcp(rr)).toEqual({
      ok: true,
      packets: [
        {
          type: 'rr',
          ssrc: 0x0a0b0c0d,
          reports: [
            {
              ssrc: 0xcafe,
              fractionLost: 64,
              cumulativeLost: -2,
              extendedHighestSequence: 0x20010,
              jitter: 256,
              lastSenderReport: 0,
              delaySinceLastSenderReport: 0,
            },
          ],
        },
      ],
    });
  });

  it('makes a report block from a receiver’s counts (RFC 3550 A.3)', () => {
    const previous = { ssrc: 7, baseSequence: 100, highestSequence: 149, received: 50, jitter: 12 };
    const now = { ssrc: 7, baseSequence: 100, highestSequence: 199, received: 95, jitter: 20.4 };
    expect(reportBlock(now, previous)).toEqual({
      ssrc: 7,
      fractionLost: 25, // 5 of the last 50: ⌊5 × 256 / 50⌋
      cumulativeLost: 5,
      extendedHighestSequence: 199,
      jitter: 20,
      lastSenderReport: 0,
      delaySinceLastSenderReport: 0,
    });
    expect(reportBlock({ ...now, received: 101 }, previous)).toMatchObject({
      fractionLost: 0,
      cumulativeLost: -1,
    });
  });

  it('never throws on garbage (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 120 }), (bytes) => {
        const read = decodeRtcp(bytes);
        if (!read.ok) expect(['too-short', 'not-version-2', 'truncated', 'not-rtcp']).toContain(read.reason);
      }),
      { numRuns: 2000 },
    );
    const report = encodeRtcpReport({ ssrc: 1, cname: 'abc', reports: [block] });
    // Cut anywhere but between its two packets (the RR is 32 bytes), it is refused.
    for (let cut = 1; cut < report.length; cut++) {
      expect(decodeRtcp(report.subarray(0, cut)).ok).toBe(cut === 32);
    }
  });
});

describe('RFC 4733 key events', () => {
  it('encodes event, end bit, volume and duration in four bytes', () => {
    const bytes = encodeTelephoneEvent({ event: 11, end: true, volume: 10, duration: 800 });
    expect([...bytes]).toEqual([11, 0x8a, 0x03, 0x20]);
    expect(decodeTelephoneEvent(bytes)).toEqual({ event: 11, end: true, volume: 10, duration: 800 });
    expect(decodeTelephoneEvent(Uint8Array.of(1, 2, 3))).toBeNull();
    expect(() => encodeTelephoneEvent({ event: 1, end: false, volume: 64, duration: 0 })).toThrow(RangeError);
    expect([keyEvent('0'), keyEvent('*'), keyEvent('#'), keyEvent('d'), keyEvent('x')]).toEqual([
      0,
      10,
      11,
      15,
      undefined,
    ]);
    expect([eventKey(9), eventKey(12), eventKey(16)]).toEqual(['9', 'A', undefined]);
  });

  it('sends one key as growing durations, then the end three times', () => {
    const frames = keyFrames('5', 101);
    const events = frames.map((frame) => {
      if (frame.kind !== 'event') throw new Error('not an event');
      return { start: frame.start, payloadType: frame.payloadType, ...decodeTelephoneEvent(frame.payload) };
    });
    expect(events).toEqual([
      { start: true, payloadType: 101, event: 5, end: false, volume: 10, duration: 160 },
      { start: false, payloadType: 101, event: 5, end: false, volume: 10, duration: 320 },
      { start: false, payloadType: 101, event: 5, end: false, volume: 10, duration: 480 },
      { start: false, payloadType: 101, event: 5, end: false, volume: 10, duration: 640 },
      { start: false, payloadType: 101, event: 5, end: true, volume: 10, duration: 800 },
      { start: false, payloadType: 101, event: 5, end: true, volume: 10, duration: 800 },
      { start: false, payloadType: 101, event: 5, end: true, volume: 10, duration: 800 },
    ]);
    expect(() => keyFrames('x', 101)).toThrow(/DTMF/);
    expect(() => keyFrames('1', 101, { toneMs: 9000 })).toThrow(/8 seconds/);
  });

  it('goes out through the pacer as RFC 4733 asks: one timestamp, marker first, audio after', () => {
    const timers = new FakeTimers();
    const keys = new KeySender(101);
    const sent: RtpPacket[] = [];
    const speech = Uint8Array.from({ length: 160 }, (_, i) => i % 100);
    const pacer = new RtpPacer({
      payloadType: 0,
      silence: silence(MULAW_8K, 20),
      next: (): PacerFrame => keys.next() ?? { kind: 'audio', payload: speech },
      send: (bytes) => sent.push(decoded(bytes)),
      sequence: 65533,
      timestamp: 1000,
      timers,
    });
    pacer.start(); // tick 0: audio
    keys.send('7');
    timers.runUntil(20 * 12);
    pacer.stop();
    const [first, ...rest] = sent;
    expect(first).toMatchObject({ payloadType: 0, marker: true, timestamp: 1000, sequence: 65533 });
    const event = rest.slice(0, 7);
    expect(event.map((p) => p.payloadType)).toEqual(new Array(7).fill(101));
    expect(event.map((p) => p.timestamp)).toEqual(new Array(7).fill(1160));
    expect(event.map((p) => p.marker)).toEqual([true, false, false, false, false, false, false]);
    expect(event.map((p) => p.sequence)).toEqual([65534, 65535, 0, 1, 2, 3, 4]);
    // Audio comes back after the key's gap, timestamped in real time, as a new talk spurt.
    const after = rest.slice(7);
    expect(after[0]).toMatchObject({ payloadType: 0, marker: true, timestamp: 1000 + 8 * 160, sequence: 5 });
    expect(after.slice(1).every((p) => !p.marker && p.payloadType === 0)).toBe(true);
  });

  it('hears each key once: repeated ends, a lost start, the same key twice, a straggler', () => {
    const receiver = new KeyReceiver();
    const packetsOf = (key: string, timestamp: number) =>
      keyFrames(key, 101).map((frame) => ({ timestamp, payload: frame.payload }));
    const heard: string[] = [];
    const hear = (packets: { timestamp: number; payload: Uint8Array }[]) => {
      for (const packet of packets) {
        const key = receiver.push(packet);
        if (key) heard.push(`${key.key}@${key.timestamp}`);
      }
    };
    hear(packetsOf('1', 1000));
    hear(packetsOf('1', 3000)); // the same key again is a new event: a new timestamp
    hear(packetsOf('2', 5000).slice(3)); // its first packets lost
    const straggler = packetsOf('2', 5000)[0]!;
    hear(packetsOf('#', 7000).slice(0, 2));
    hear([straggler]); // a late packet of the earlier key
    hear(packetsOf('#', 7000).slice(2));
    expect(heard).toEqual(['1@1000', '1@3000', '2@5000', '#@7000']);
    expect(
      receiver.push({
        timestamp: 9000,
        payload: encodeTelephoneEvent({ event: 16, end: false, volume: 10, duration: 160 }),
      }),
    ).toBeNull();
    expect(receiver.push({ timestamp: 9100, payload: Uint8Array.of(1) })).toBeNull();
  });

  it('round trips dialled digits through the pacer, the wire and the receiver', () => {
    const timers = new FakeTimers();
    const keys = new KeySender(96);
    const receiver = new KeyReceiver();
    const heard: string[] = [];
    const pacer = new RtpPacer({
      payloadType: 0,
      silence: silence(MULAW_8K, 20),
      next: () => keys.next(),
      send: (bytes) => {
        const packet = decoded(bytes);
        if (packet.payloadType !== 96) return;
        const key = receiver.push(packet);
        if (key) heard.push(key.key);
      },
      timers,
    });
    keys.send('1w1*#9');
    expect(() => keys.send('12x')).toThrow(RangeError);
    pacer.start();
    timers.runUntil(5000);
    expect(keys.sending).toBe(false);
    expect(heard.join('')).toBe('11*#9');
  });
});
