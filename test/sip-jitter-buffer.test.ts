/**
 * The receive side of the SIP trunk's RTP (src/sip/jitter-buffer.ts), in the test's own time: frames
 * come out in order a playout delay after the first packet, whatever order the packets arrive in
 * within that delay (a property), with lost, late, duplicated and wrapping sequences counted and
 * played right, pauses and bursts kept to the delay, new streams taken up, and the interarrival
 * jitter equal to RFC 3550 §6.4.1 worked by hand.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JitterBuffer, type JitterPacket } from '../src/sip/jitter-buffer.js';
import { reportBlock } from '../src/sip/rtcp.js';
import { ALAW_8K, MULAW_8K, MULAW_SILENCE } from '../src/voice/audio.js';

const SSRC = 0x5eed;

/** Packet `n` of a stream: 20 ms of a byte that tells it apart (never a silence byte). */
function packet(n: number, options: { first?: number; ssrc?: number; bytes?: number } = {}): JitterPacket {
  const first = options.first ?? 1000;
  const bytes = options.bytes ?? 160;
  return {
    sequence: (first + n) & 0xffff,
    timestamp: (n * bytes) >>> 0,
    ssrc: options.ssrc ?? SSRC,
    payload: new Uint8Array(bytes).fill(n % 100),
  };
}

/** What a frame holds: the packet number whose byte fills it, or "-" for silence. */
function label(frame: Uint8Array, silenceByte = MULAW_SILENCE): string | number {
  expect(frame.length).toBe(160);
  if (frame.every((b) => b === silenceByte)) return '-';
  expect(frame.every((b) => b === frame[0])).toBe(true);
  return frame[0]!;
}

/** Runs arrivals [packet, time] and a pull every `pullEveryMs` and at `untilMs`; the frames' labels. */
function play(
  buffer: JitterBuffer,
  arrivals: [JitterPacket, number][],
  untilMs: number,
  pullEveryMs = 20,
): (string | number)[] {
  const sorted = [...arrivals].sort((a, b) => a[1] - b[1]);
  const labels: (string | number)[] = [];
  let next = 0;
  const times = Array.from({ length: Math.floor(untilMs / pullEveryMs) + 1 }, (_, i) => i * pullEveryMs);
  if (times.at(-1) !== untilMs) times.push(untilMs);
  for (const now of times) {
    while (next < sorted.length && sorted[next]![1] <= now) {
      const [p, at] = sorted[next++]!;
      buffer.push(p, at);
    }
    labels.push(...buffer.pull(now).map((frame) => label(frame)));
  }
  return labels;
}

const steady = (count: number, options?: Parameters<typeof packet>[1]): [JitterPacket, number][] =>
  Array.from({ length: count }, (_, n) => [packet(n, options), n * 20]);

describe('the jitter buffer', () => {
  it('plays a steady stream in order, a playout delay after the first packet', () => {
    const buffer = new JitterBuffer({ format: MULAW_8K });
    expect(buffer.pull(1000)).toEqual([]); // nothing before the first packet
    buffer.push(packet(0), 0);
    expect(buffer.pull(59)).toEqual([]);
    expect(buffer.pull(60).map((f) => label(f))).toEqual([0]);
    const buffer2 = new JitterBuffer({ format: MULAW_8K });
    const labels = play(buffer2, steady(10), 240);
    expect(labels).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(buffer2.stats).toMatchObject({ received: 10, lost: 0, late: 0, duplicates: 0, discarded: 0 });
  });

  it('takes its delay from the options', () => {
    const buffer = new JitterBuffer({ format: MULAW_8K, delayMs: 100 });
    buffer.push(packet(0), 0);
    expect(buffer.pull(99)).toEqual([]);
    expect(buffer.pull(100)).toHaveLength(1);
    expect(() => new JitterBuffer({ format: MULAW_8K, delayMs: 60, maxDelayMs: 70 })).toThrow(RangeError);
  });

  it('puts reordered packets back in order', () => {
    const arrivals = steady(8);
    // 2 and 3 swap; 6 comes 50 ms late, after 7.
    arrivals[2]![1] = 61;
    arrivals[3]![1] = 59;
    arrivals[6]![1] = 170;
    const buffer = new JitterBuffer({ format: MULAW_8K });
    expect(play(buffer, arrivals, 200)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(buffer.stats).toMatchObject({ lost: 0, late: 0 });
  });

  it('plays any order within the delay in order, duplicates dropped (property)', () => {
    const count = 60;
    const scenario = fc.record({
      delays: fc.array(fc.integer({ min: 0, max: 59 }), { minLength: count, maxLength: count }),
      copies: fc.array(fc.tuple(fc.integer({ min: 0, max: count - 1 }), fc.integer({ min: 0, max: 59 })), {
        maxLength: 10,
      }),
      // A caller may pull late, many frames at once: those are not a burst to cut.
      pullEveryMs: fc.integer({ min: 1, max: 250 }),
    });
    fc.assert(
      fc.property(scenario, ({ delays, copies, pullEveryMs }) => {
        const arrivals: [JitterPacket, number][] = delays.map((delay, n) => [packet(n), n * 20 + delay]);
        for (const [n, delay] of copies) arrivals.push([packet(n), n * 20 + delay]);
        const buffer = new JitterBuffer({ format: MULAW_8K });
        const labels = play(buffer, arrivals, count * 20 + 200, pullEveryMs);
        const expected = Array.from({ length: count }, (_, n) => n);
        expect(labels.slice(0, count)).toEqual(expected);
        expect(buffer.stats).toMatchObject({
          lost: 0,
          late: 0,
          discarded: 0,
          duplicates: copies.length,
          received: arrivals.length,
        });
      }),
      { numRuns: 200 },
    );
  });

  it('plays a lost packet’s time as silence, μ-law and A-law', () => {
    const arrivals = steady(8).filter(([p]) => p.sequence !== 1005);
    const buffer = new JitterBuffer({ format: MULAW_8K });
    expect(play(buffer, arrivals, 200)).toEqual([0, 1, 2, 3, 4, '-', 6, 7]);
    expect(buffer.stats).toMatchObject({ received: 7, lost: 1, late: 0, concealedMs: 20 });

    const alaw = new JitterBuffer({ format: ALAW_8K });
    for (const [p, at] of steady(4).filter(([p]) => p.sequence !== 1001)) alaw.push(p, at);
    const frames = alaw.pull(120);
    expect(frames.map((f) => label(f, 0xd5))).toEqual([0, '-', 2, 3]);
  });

  it('drops a packet that comes after its time was played, and counts it late, not lost', () => {
    const arrivals = steady(8);
    arrivals[3]![1] = 150; // due at 120
    const buffer = new JitterBuffer({ format: MULAW_8K });
    expect(play(buffer, arrivals, 200)).toEqual([0, 1, 2, '-', 4, 5, 6, 7]);
    expect(buffer.stats).toMatchObject({ received: 8, lost: 0, late: 1, concealedMs: 20 });
  });

  it('drops duplicates, before and after their time', () => {
    const arrivals = steady(8);
    arrivals.push([packet(3), 65], [packet(1), 130]);
    const buffer = new JitterBuffer({ format: MULAW_8K });
    expect(play(buffer, arrivals, 200)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(buffer.stats).toMatchObject({ received: 10, duplicates: 2, late: 0, lost: 0 });
  });

  it('follows the sequence across its 16-bit wrap', () => {
    const arrivals = steady(20, { first: 65530 });
    [arrivals[5]![1], arrivals[6]![1]] = [arrivals[6]![1], arrivals[5]![1]]; // 65535 and 0 swap
    const buffer = new JitterBuffer({ format: MULAW_8K });
    // Frames at 60, 80 … 500: the 20 packets, then silence.
    expect(play(buffer, arrivals, 500)).toEqual([...Array.from({ length: 20 }, (_, n) => n), '-', '-', '-']);
    expect(buffer.stats).toMatchObject({ lost: 0, late: 0 });
    // RFC 3550: one wrap counted in the upper 16 bits.
    expect(buffer.reception()).toMatchObject({ baseSequence: 65530, highestSequence: 0x10000 + 13 });
  });

  it('plays a key event’s slot as silence, not as a loss', () => {
    const arrivals = steady(6);
    arrivals[2]![0] = { ...arrivals[2]![0], payload: null };
    const buffer = new JitterBuffer({ format: MULAW_8K });
    expect(play(buffer, arrivals, 160)).toEqual([0, 1, '-', 3, 4, 5]);
    expect(buffer.stats).toMatchObject({ lost: 0, received: 6 });
  });

  it('plays 30 ms packets as 20 ms frames, the audio unbroken', () => {
    const buffer = new JitterBuffer({ format: MULAW_8K });
    const payloads: Uint8Array[] = [];
    const frames: Uint8Array[] = [];
    for (let now = 0; now <= 340; now += 10) {
      if (now % 30 === 0 && now < 300) {
        const n = now / 30;
        const p = packet(n, { bytes: 240 });
        p.payload = Uint8Array.from({ length: 240 }, (_, i) => (n * 240 + i) % 251);
        payloads.push(p.payload);
        buffer.push(p, now);
      }
      frames.push(...buffer.pull(now));
    }
    // Frames at 60 … 340: the ten packets' 300 ms exactly.
    expect(frames).toHaveLength(15);
    const played = Buffer.concat(frames);
    expect(played.equals(Buffer.concat(payloads))).toBe(true);
    expect(buffer.stats.lost).toBe(0);
  });

  it('waits out a pause with silence, then keeps to its delay when the burst comes', () => {
    // 0-9 steady; 10-19 held up in the network and delivered at once at 500 ms.
    const arrivals: [JitterPacket, number][] = Array.from({ length: 20 }, (_, n) => [
      packet(n),
      n < 10 ? n * 20 : 500,
    ]);
    arrivals.push(
      ...Array.from({ length: 5 }, (_, i): [JitterPacket, number] => [packet(20 + i), 520 + i * 20]),
    );
    const buffer = new JitterBuffer({ format: MULAW_8K });
    const labels = play(buffer, arrivals, 700);
    // Silence from 260 ms (the 11th frame) until 560 (500 + the delay); then the oldest beyond the
    // longest delay (160 ms) are skipped, down to three packets' worth.
    const silentUntilResume = (560 - 260) / 20;
    expect(labels.slice(0, 10)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(labels.slice(10, 10 + silentUntilResume)).toEqual(new Array(silentUntilResume).fill('-'));
    const resumed = labels.slice(10 + silentUntilResume).filter((l) => l !== '-');
    expect(resumed[0]).toBeGreaterThan(10);
    expect(resumed).toEqual([...resumed].sort((a, b) => Number(a) - Number(b)));
    expect(resumed.at(-1)).toBe(24);
    expect(buffer.stats.lost).toBe(0);
    expect(buffer.stats.discarded).toBe(Number(resumed[0]) - 10);
    expect(buffer.stats.discarded + resumed.length).toBe(15);
  });

  it('plays the old stream out, then a new SSRC a delay after its first packet; stragglers are late', () => {
    const arrivals = steady(5);
    for (let n = 0; n < 5; n++) arrivals.push([packet(10 + n, { ssrc: 77, first: 40000 }), 100 + n * 20]);
    arrivals.push([packet(4), 150]); // the old stream's last packet again, after the change
    const buffer = new JitterBuffer({ format: MULAW_8K });
    const labels = play(buffer, arrivals, 300);
    // The new stream confirms itself with its second packet (at 120 ms), after the old one's 0-2
    // played; the old one's 3 and 4 play next, then the new one from 160 ms (100 + the delay).
    expect(labels).toEqual([0, 1, 2, 3, 4, 10, 11, 12, 13, 14, '-', '-', '-']);
    expect(buffer.reception()).toMatchObject({ ssrc: 77, received: 5 });
    expect(buffer.stats).toMatchObject({ received: 11, late: 1, lost: 0, discarded: 0 });
  });

  it('ignores one stray packet far off the sequence, and follows a real jump', () => {
    const arrivals = steady(8);
    arrivals.push([{ ...packet(0), sequence: 30000 }, 45]);
    const buffer = new JitterBuffer({ format: MULAW_8K });
    expect(play(buffer, arrivals, 200)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(buffer.stats).toMatchObject({ discarded: 1, lost: 0 });

    const jumping = new JitterBuffer({ format: MULAW_8K });
    const jump = [
      ...steady(4),
      ...Array.from({ length: 4 }, (_, n): [JitterPacket, number] => [
        packet(4 + n, { first: 21000 }),
        80 + n * 20,
      ]),
    ];
    expect(play(jumping, jump, 400).filter((l) => l !== '-')).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('accounts for every number when a far end keeps jumping its sequence', () => {
    const buffer = new JitterBuffer({ format: MULAW_8K });
    let sequence = 0;
    for (let n = 0; n < 2000; n++) {
      buffer.push({ ...packet(n), sequence }, n * 0.01);
      sequence = (sequence + 2999) & 0xffff;
    }
    // Frames at 60 and 80 play packet 0 and the loss after it; the frame of now (100) finds six
    // million numbers of delay and skips them, down to the last packet's delay.
    expect(buffer.pull(100).map((f) => label(f))).toEqual([0, '-', '-']);
    const highest = 1999 * 2999;
    expect(buffer.stats.discarded).toBe(1998);
    // Played, discarded or lost: every number up to the one the last frame played.
    expect(1 + buffer.stats.discarded + buffer.stats.lost).toBe(highest - 1);
    expect(buffer.pull(140).map((f) => label(f))).toEqual(['-', 99]);
  });

  it('computes the interarrival jitter of RFC 3550 §6.4.1 (worked by hand)', () => {
    // Timestamps 0, 160, 320, 480; arrivals 0, 20, 45, 60 ms (×8 = 0, 160, 360, 480 units).
    // Transit: 0, 0, 40, 0 → D: 0, 40, 40 → J: 0, 0 + (40 − 0)/16 = 2.5, 2.5 + (40 − 2.5)/16 = 4.84375.
    const buffer = new JitterBuffer({ format: MULAW_8K });
    for (const [n, at] of [
      [0, 0],
      [1, 20],
      [2, 45],
      [3, 60],
    ] as const) {
      buffer.push(packet(n), at);
    }
    expect(buffer.reception()!.jitter).toBeCloseTo(4.84375, 10);
    expect(buffer.stats.jitterMs).toBeCloseTo(4.84375 / 8, 10);
  });

  it('gives the counts an RTCP receiver report is made from', () => {
    const buffer = new JitterBuffer({ format: MULAW_8K });
    const arrivals = steady(10).filter(([p]) => p.sequence !== 1004 && p.sequence !== 1007);
    play(buffer, arrivals, 300);
    const counts = buffer.reception()!;
    expect(counts).toMatchObject({ ssrc: SSRC, received: 8 });
    expect(counts.highestSequence - counts.baseSequence + 1).toBe(10);
    expect(reportBlock(counts, undefined)).toMatchObject({
      ssrc: SSRC,
      cumulativeLost: 2,
      fractionLost: Math.floor((2 * 256) / 10),
      extendedHighestSequence: 1009,
    });
  });
});
