/**
 * The send side's clock (src/sip/rtp-pacer.ts) on fake timers: ten thousand packets leave on the
 * 20 ms grid however late each timer wakes (no drift), sequence and timestamp wrap as they should,
 * the timestamp keeps real time across silence and stalls, and the marker bit starts talk spurts.
 */
import { describe, expect, it } from 'vitest';
import { decodeRtp, type RtpPacket } from '../src/sip/rtp.js';
import { type PacerFrame, RtpPacer } from '../src/sip/rtp-pacer.js';
import { MULAW_8K, silence } from '../src/voice/audio.js';
import { FakeTimers } from './support/fake-timers.js';

const SPEECH: PacerFrame = { kind: 'audio', payload: new Uint8Array(160).fill(0x2a) };

/** A deterministic stand-in for random wake-up delays, 0 to `maxMs`. */
function lateness(maxMs: number, seed = 7): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return (state / 2 ** 31) * maxMs;
  };
}

function recorder(timers: FakeTimers) {
  const sent: { at: number; packet: RtpPacket }[] = [];
  const send = (bytes: Uint8Array) => {
    const result = decodeRtp(bytes);
    if (!result.ok) throw new Error(result.reason);
    sent.push({ at: timers.now(), packet: result.packet });
  };
  return { sent, send };
}

describe('the RTP pacer', () => {
  it('sends 10,000 packets on the 20 ms grid, however late its timer wakes', () => {
    const start = 1234.567;
    const timers = new FakeTimers(start, lateness(15));
    const { sent, send } = recorder(timers);
    const pacer = new RtpPacer({
      payloadType: 0,
      ssrc: 0xabc,
      silence: silence(MULAW_8K, 20),
      next: () => SPEECH,
      send,
      sequence: 60000,
      timestamp: 2 ** 32 - 800_000,
      timers,
    });
    pacer.start();
    timers.runUntil(start + 9_999 * 20 + 15);
    pacer.stop();
    expect(sent).toHaveLength(10_000);
    for (const [n, { at, packet }] of sent.entries()) {
      // Each packet leaves at its own time on the grid, up to one wake-up's lateness after it:
      // lateness never adds up (setInterval would be 10,000 wake-ups behind by now).
      expect(at).toBeGreaterThanOrEqual(start + n * 20 - 1e-6);
      expect(at).toBeLessThan(start + n * 20 + 16);
      expect(packet.sequence).toBe((60000 + n) % 65536);
      expect(packet.timestamp).toBe((2 ** 32 - 800_000 + n * 160) % 2 ** 32);
      expect(packet.ssrc).toBe(0xabc);
      expect(packet.marker).toBe(n === 0);
    }
    expect(pacer.stats).toEqual({ packets: 10_000, octets: 1_600_000, skipped: 0 });
    expect(timers.pending).toBe(0);
  });

  it('marks the first packet of each talk spurt, and keeps time across silence', () => {
    const timers = new FakeTimers();
    const { sent, send } = recorder(timers);
    const script: (PacerFrame | null)[] = [null, null, SPEECH, SPEECH, SPEECH, null, SPEECH, SPEECH];
    const pacer = new RtpPacer({
      payloadType: 8,
      silence: silence(MULAW_8K, 20),
      next: () => script.shift() ?? null,
      send,
      sequence: 0,
      timestamp: 0,
      timers,
    });
    pacer.start();
    timers.runUntil(7 * 20);
    expect(sent.map(({ packet }) => [packet.marker, packet.timestamp, packet.payload[0]])).toEqual([
      [true, 0, 0xff], // the first packet of the stream, silence
      [false, 160, 0xff],
      [true, 320, 0x2a], // a talk spurt starts
      [false, 480, 0x2a],
      [false, 640, 0x2a],
      [false, 800, 0xff],
      [true, 960, 0x2a], // and another
      [false, 1120, 0x2a],
    ]);
    expect(sent.every(({ packet }) => packet.payloadType === 8)).toBe(true);
  });

  it('sends nothing for silence when asked, the timestamp still keeping time', () => {
    const timers = new FakeTimers();
    const { sent, send } = recorder(timers);
    const script: (PacerFrame | null)[] = [SPEECH, null, null, SPEECH, SPEECH];
    const pacer = new RtpPacer({
      payloadType: 0,
      silence: silence(MULAW_8K, 20),
      next: () => script.shift() ?? null,
      send,
      sequence: 100,
      timestamp: 0,
      sendSilence: false,
      timers,
    });
    pacer.start();
    timers.runUntil(4 * 20);
    expect(sent.map(({ packet }) => [packet.sequence, packet.timestamp, packet.marker])).toEqual([
      [100, 0, true],
      [101, 480, true],
      [102, 640, false],
    ]);
  });

  it('catches up a short stall at once, and skips the packet times of a long one', () => {
    const timers = new FakeTimers();
    const { sent, send } = recorder(timers);
    const pacer = new RtpPacer({
      payloadType: 0,
      silence: silence(MULAW_8K, 20),
      next: () => SPEECH,
      send,
      sequence: 0,
      timestamp: 0,
      timers,
    });
    pacer.start();
    timers.runUntil(100); // packets 0-5
    timers.advance(70); // the event loop is busy until 170: packets 6-8 are due
    timers.runUntil(170);
    expect(sent.slice(6).map(({ at, packet }) => [at, packet.timestamp])).toEqual([
      [170, 6 * 160],
      [170, 7 * 160],
      [170, 8 * 160],
    ]);
    timers.advance(400); // busy until 570: packets 9-28 are due, the last five are sent
    timers.runUntil(570);
    const afterStall = sent.slice(9);
    expect(afterStall.map(({ packet }) => packet.timestamp / 160)).toEqual([24, 25, 26, 27, 28]);
    expect(afterStall.map(({ packet }) => packet.sequence)).toEqual([9, 10, 11, 12, 13]);
    expect(afterStall[0]!.packet.marker).toBe(true);
    expect(pacer.stats.skipped).toBe(15);
    timers.runUntil(600);
    expect(sent.at(-1)!.packet.timestamp / 160).toBe(30);
  });

  it('stops, and tells the RTP time of an instant for sender reports', () => {
    const timers = new FakeTimers(500);
    const { sent, send } = recorder(timers);
    const pacer = new RtpPacer({
      payloadType: 0,
      silence: silence(MULAW_8K, 20),
      next: () => null,
      send,
      timestamp: 4000,
      timers,
    });
    pacer.start();
    timers.runUntil(540);
    expect(sent).toHaveLength(3);
    expect(pacer.timestampAt(512.5)).toBe(4100);
    pacer.stop();
    timers.runUntil(2000);
    expect(sent).toHaveLength(3);
    expect(timers.pending).toBe(0);
    expect(
      () =>
        new RtpPacer({ payloadType: 0, silence: new Uint8Array(0), next: () => null, send, packetMs: 0.01 }),
    ).toThrow(RangeError);
  });
});
