/**
 * One call's RTP endpoint (src/sip/rtp-session.ts) and the port range it binds from
 * (src/sip/port-range.ts), on real UDP sockets on 127.0.0.1. The far end is a second RtpSession or a
 * raw socket that writes exactly the packets a test needs (lost, reordered, from another port,
 * garbage). Most tests drive the call's clock by hand (FakeTimers): each 20 ms step fires the timers,
 * then waits until the datagrams sent have arrived, so arrival times are the fake clock's and the
 * results do not depend on the machine's load. The last test runs on real time to prove that close()
 * leaves no socket or timer behind.
 */
import dgram from 'node:dgram';
import { afterEach, describe, expect, it } from 'vitest';
import { type MediaPorts, PortRange, PortRangeExhaustedError } from '../src/sip/port-range.js';
import { decodeRtcp, encodeRtcpBye, encodeRtcpReport, type RtcpPacket } from '../src/sip/rtcp.js';
import { decodeRtp, encodeRtp, type RtpPacket } from '../src/sip/rtp.js';
import { type RemoteReport, RtpSession, type RtpSessionOptions } from '../src/sip/rtp-session.js';
import type { NegotiatedMedia } from '../src/sip/sdp.js';
import { MULAW_8K } from '../src/voice/audio.js';
import { dtmfAudio } from '../src/voice/dtmf-tones.js';
import { FakeTimers } from './support/fake-timers.js';

const HOST = '127.0.0.1';
const SILENCE = 0xff;

// --- rig ------------------------------------------------------------------------------------------

/** A range of its own per file run, so a parallel test file rarely meets it (a busy pair is skipped). */
const BASE = 20000 + 2 * Math.floor(Math.random() * 15000);
const ports = new PortRange({ min: BASE, max: BASE + 63, host: HOST });
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function mediaTo(port: number, overrides: Partial<NegotiatedMedia> = {}): NegotiatedMedia {
  return {
    codec: 'PCMU',
    payloadType: 0,
    telephoneEventPayloadType: 101,
    receivePayloadTypes: { audio: 0, telephoneEvent: 101 },
    remoteAddress: HOST,
    remotePort: port,
    remoteRtcpPort: port + 1,
    ptime: 20,
    direction: 'sendrecv',
    hold: false,
    ...overrides,
  };
}

interface Heard {
  session: RtpSession;
  audio: Uint8Array[];
  digits: string[];
  marks: { name: string; sentBefore: number }[];
  reports: RemoteReport[];
  byes: number;
  errors: unknown[];
}

/** A session on a fresh pair, sending to `remotePort`, with everything it hears recorded. */
async function session(
  timers: FakeTimers | undefined,
  remotePort: number,
  extra: Omit<Partial<RtpSessionOptions>, 'media'> & { media?: Partial<NegotiatedMedia> } = {},
  given?: MediaPorts,
): Promise<Heard & { port: number }> {
  const pair = given ?? (await ports.allocate());
  cleanups.push(() => ports.release(pair));
  const heard = { audio: [], digits: [], marks: [], reports: [], byes: 0, errors: [] } as unknown as Heard;
  const { media, ...options } = extra;
  heard.session = new RtpSession({
    sockets: pair,
    media: mediaTo(remotePort, media),
    timers,
    wallClock: timers ? () => 1_700_000_000_000 + timers.now() : undefined,
    onAudio: (frame) => heard.audio.push(Uint8Array.from(frame)),
    onDigit: (key) => heard.digits.push(key),
    onMark: (name) => heard.marks.push({ name, sentBefore: heard.session.stats().packetsSent }),
    onRemoteReport: (report) => heard.reports.push(report),
    onBye: () => {
      heard.byes += 1;
    },
    onError: (error) => heard.errors.push(error),
    ...options,
  });
  cleanups.push(() => heard.session.close());
  return Object.assign(heard, { port: pair.port });
}

/** Two sessions, each the other's far end. */
async function call(timers: FakeTimers | undefined, extra: Partial<RtpSessionOptions> = {}) {
  const pairA = await ports.allocate();
  const pairB = await ports.allocate();
  const a = await session(timers, pairB.port, extra, pairA);
  const b = await session(timers, pairA.port, extra, pairB);
  const exchanged = () => {
    const [x, y] = [a.session.stats(), b.session.stats()];
    return (
      x.packetsReceived === y.packetsSent &&
      y.packetsReceived === x.packetsSent &&
      x.reportsReceived === y.reportsSent &&
      y.reportsReceived === x.reportsSent
    );
  };
  return { a, b, exchanged };
}

interface Raw {
  socket: dgram.Socket;
  port: number;
  rtp: { packet: RtpPacket; port: number }[];
  rtcp: RtcpPacket[][];
  send(data: Uint8Array, port: number): Promise<void>;
}

/** A bare UDP socket on `host` (another loopback address plays a stranger elsewhere on the net). */
async function raw(host = HOST): Promise<Raw> {
  const socket = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, host, resolve));
  cleanups.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
  const received: Raw = {
    socket,
    port: socket.address().port,
    rtp: [],
    rtcp: [],
    send: (data, port) =>
      new Promise<void>((resolve, reject) =>
        socket.send(data, port, HOST, (error) => (error ? reject(error) : resolve())),
      ),
  };
  socket.on('message', (data, source) => {
    const rtp = decodeRtp(data);
    if (rtp.ok) {
      received.rtp.push({
        packet: { ...rtp.packet, payload: Uint8Array.from(rtp.packet.payload) },
        port: source.port,
      });
    }
    const rtcp = decodeRtcp(data);
    if (!rtp.ok && rtcp.ok) received.rtcp.push(rtcp.packets);
  });
  return received;
}

async function waitFor(condition: () => boolean, what = 'the datagrams'): Promise<void> {
  const deadline = Date.now() + 3000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** Runs the fake clock `ms` on in 20 ms steps, each time until what was sent has arrived. */
async function run(timers: FakeTimers, ms: number, arrived: () => boolean = () => true): Promise<void> {
  for (let step = 0; step < ms / 20; step++) {
    timers.runUntil(timers.now() + 20);
    await waitFor(arrived);
  }
}

function concat(frames: Uint8Array[]): Uint8Array {
  return Uint8Array.from(Buffer.concat(frames));
}

/** Audio as the far end heard it: without the silence around it. */
function trimmed(audio: Uint8Array): Uint8Array {
  let start = 0;
  let end = audio.length;
  while (start < end && audio[start] === SILENCE) start += 1;
  while (end > start && audio[end - 1] === SILENCE) end -= 1;
  return audio.subarray(start, end);
}

/** Speech-like bytes that are never μ-law silence. */
function speech(length: number, seed: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => 1 + ((i * 7 + seed) % 200));
}

function audioPacket(sequence: number, payload: Uint8Array, timestamp = 1000 + sequence * 160): Uint8Array {
  return encodeRtp({ payloadType: 0, sequence, timestamp, ssrc: 0x5eed, payload });
}

// --- tests ----------------------------------------------------------------------------------------

describe('an RTP session', () => {
  it('carries audio both ways, complete and in order, in 20 ms frames', async () => {
    const timers = new FakeTimers(1000);
    const { a, b, exchanged } = await call(timers);
    const fromA = speech(1000, 3);
    const fromB = speech(730, 11);
    a.session.media(fromA.subarray(0, 333));
    a.session.media(fromA.subarray(333));
    b.session.media(fromB);
    await run(timers, 600, exchanged);
    for (const frame of [...a.audio, ...b.audio]) expect(frame).toHaveLength(160);
    // Playout starts a delay (60 ms) after the first packet, then one frame every 20 ms.
    expect(b.audio.length).toBeGreaterThanOrEqual(25);
    expect(trimmed(concat(b.audio))).toEqual(fromA);
    expect(trimmed(concat(a.audio))).toEqual(fromB);
    // 1000 bytes are 7 packets: the last holds 40 bytes and 120 of silence.
    const heardByB = concat(b.audio);
    const start = heardByB.indexOf(fromA[0]!);
    expect(heardByB.subarray(start + 1000, start + 1120)).toEqual(new Uint8Array(120).fill(SILENCE));
    expect(a.session.stats()).toMatchObject({ packetsLost: 0, lateOrDuplicate: 0, rejected: 0 });
    expect(b.session.stats().packetsReceived).toBe(a.session.stats().packetsSent);
    expect([...a.errors, ...b.errors]).toEqual([]);
  });

  it('paces 160-byte packets at +1 sequence and +160 timestamp, and fires marks once their audio is sent', async () => {
    const timers = new FakeTimers(1000);
    const far = await raw();
    const near = await session(timers, far.port, { ssrc: 0xabc, sequence: 65534, timestamp: 2 ** 32 - 320 });
    const sentAll = () => far.rtp.length === near.session.stats().packetsSent;
    await waitFor(sentAll);
    // The first packet went at once, before any audio: silence.
    expect(near.session.stats().packetsSent).toBe(1);
    const audio = speech(400, 5);
    near.session.media(audio);
    near.session.mark('first');
    const more = speech(160, 9);
    near.session.media(more);
    near.session.mark('second');
    near.session.mark('third');
    expect(near.marks).toEqual([]);
    await run(timers, 100, sentAll);
    // Packets 2-5 carry the 560 bytes back to back (audio is padded only when the queue runs dry):
    // 'first' fires as the 4th goes (byte 400 is in it), the others with the 5th, padded.
    expect(near.marks).toEqual([
      { name: 'first', sentBefore: 4 },
      { name: 'second', sentBefore: 5 },
      { name: 'third', sentBefore: 5 },
    ]);
    const packets = far.rtp.map((r) => r.packet);
    expect(packets.length).toBe(6);
    for (const [n, packet] of packets.entries()) {
      expect(packet.sequence).toBe((65534 + n) % 65536);
      expect(packet.timestamp).toBe((2 ** 32 - 320 + n * 160) % 2 ** 32);
      expect(packet.ssrc).toBe(0xabc);
      expect(packet.payloadType).toBe(0);
      expect(packet.payload).toHaveLength(160);
    }
    expect(packets.map((p) => p.marker)).toEqual([true, true, false, false, false, false]);
    expect(concat(packets.slice(1, 5).map((p) => p.payload)).subarray(0, 560)).toEqual(concat([audio, more]));
    expect(packets[4]!.payload.subarray(80)).toEqual(new Uint8Array(80).fill(SILENCE));
    expect(packets[5]!.payload).toEqual(new Uint8Array(160).fill(SILENCE));

    // A mark with nothing before it fires at the next packet time, never inside mark().
    near.session.mark('idle');
    expect(near.marks.map((m) => m.name)).not.toContain('idle');
    await run(timers, 20, sentAll);
    expect(near.marks.at(-1)).toEqual({ name: 'idle', sentBefore: 7 });
  });

  it('clear() drops the queued audio and fires the pending marks at once, in order', async () => {
    const timers = new FakeTimers(1000);
    const far = await raw();
    const near = await session(timers, far.port);
    const sentAll = () => far.rtp.length === near.session.stats().packetsSent;
    near.session.media(speech(1600, 1));
    near.session.mark('x');
    near.session.media(speech(160, 2));
    near.session.mark('y');
    await run(timers, 40, sentAll);
    expect(near.marks).toEqual([]);
    near.session.clear();
    expect(near.marks.map((m) => m.name)).toEqual(['x', 'y']);
    await run(timers, 60, sentAll);
    // Two packets of speech went before the clear; silence from then on.
    const payloads = far.rtp.map((r) => r.packet.payload);
    expect(payloads.slice(1, 3).every((p) => p[0] !== SILENCE)).toBe(true);
    for (const payload of payloads.slice(3)) expect(payload).toEqual(new Uint8Array(160).fill(SILENCE));
    expect(near.marks).toHaveLength(2);
  });

  it('latches onto the source of the first valid packet (symmetric RTP) and ignores strangers', async () => {
    const timers = new FakeTimers(1000);
    const sdpAddress = await raw();
    const natted = await raw();
    const stranger = await raw();
    const near = await session(timers, sdpAddress.port);
    await run(timers, 40, () => sdpAddress.rtp.length === near.session.stats().packetsSent);
    expect(sdpAddress.rtp).toHaveLength(3);
    expect(near.session.remote.port).toBe(sdpAddress.port);
    // An invalid packet from the NAT's port does not latch; a valid one does.
    await natted.send(Uint8Array.of(1, 2, 3), near.port);
    await natted.send(audioPacket(1, speech(160, 4)), near.port);
    await waitFor(() => near.session.stats().packetsReceived === 1);
    expect(near.session.remote).toEqual({ address: HOST, port: natted.port });
    await stranger.send(audioPacket(2, speech(160, 5)), near.port);
    await waitFor(() => near.session.stats().rejected === 2);
    await run(
      timers,
      100,
      () => sdpAddress.rtp.length + natted.rtp.length === near.session.stats().packetsSent,
    );
    expect(sdpAddress.rtp).toHaveLength(3);
    expect(natted.rtp).toHaveLength(5);
    expect(stranger.rtp).toHaveLength(0);
    expect(near.session.stats().packetsReceived).toBe(1);
    expect(near.session.remote.port).toBe(natted.port);
  });

  it('lets only the addresses the signalling vouches for be latched, and reads RTCP only from them (RTP bleed)', async () => {
    const timers = new FakeTimers(1000);
    const trunk = await raw();
    const stranger = await raw('127.0.0.2');
    const near = await session(timers, trunk.port, { mayLatch: (address) => address === HOST });
    // The stranger's valid packet and RTCP BYE come first: neither is taken, nothing is latched.
    await stranger.send(audioPacket(1, speech(160, 4)), near.port);
    await stranger.send(encodeRtcpBye({ ssrc: 77, cname: 'stranger' }), near.port + 1);
    await waitFor(() => near.session.stats().rejected === 1);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(near.session.stats().packetsReceived).toBe(0);
    expect(near.byes).toBe(0);
    expect(near.session.remote).toEqual({ address: HOST, port: trunk.port });
    // The trunk's packet latches as ever.
    await trunk.send(audioPacket(2, speech(160, 5)), near.port);
    await waitFor(() => near.session.stats().packetsReceived === 1);
    await run(timers, 60, () => trunk.rtp.length === near.session.stats().packetsSent);
    expect(stranger.rtp).toHaveLength(0);
    expect(trunk.rtp.length).toBeGreaterThan(0);
  });

  it('sends and hears a key each way exactly once, as RFC 4733 events', async () => {
    const timers = new FakeTimers(1000);
    const { a, b, exchanged } = await call(timers);
    a.session.media(speech(320, 7));
    a.session.sendDigit('5');
    b.session.sendDigit('#');
    await run(timers, 400, exchanged);
    expect(b.digits).toEqual(['5']);
    expect(a.digits).toEqual(['#']);
    // The audio waited for the key (100 ms of events, 60 ms gap), then went whole.
    expect(trimmed(concat(b.audio))).toEqual(speech(320, 7));
  });

  it('plays keys as in-band tones when the far end took no telephone-event', async () => {
    const timers = new FakeTimers(1000);
    const far = await raw();
    const near = await session(timers, far.port, { media: { telephoneEventPayloadType: null } });
    near.session.sendDigit('7');
    await run(timers, 200, () => far.rtp.length === near.session.stats().packetsSent);
    expect(far.rtp.every((r) => r.packet.payloadType === 0)).toBe(true);
    expect(trimmed(concat(far.rtp.map((r) => r.packet.payload)))).toEqual(trimmed(dtmfAudio('7', MULAW_8K)));
  });

  it('plays a lost packet as silence, reorders late ones, drops duplicates and measures jitter', async () => {
    const timers = new FakeTimers(1000);
    const far = await raw();
    const near = await session(timers, far.port);
    const order = [0, 1, 2, 3, 5, 7, 6, 8, 8, 9];
    for (const [step, sequence] of order.entries()) {
      await far.send(audioPacket(sequence, new Uint8Array(160).fill(sequence + 1)), near.port);
      await waitFor(() => near.session.stats().packetsReceived === step + 1);
      await run(timers, 20);
    }
    await run(timers, 200);
    const played = near.audio.map((frame) => frame[0]);
    const start = played.indexOf(1);
    expect(played.slice(start, start + 10)).toEqual([1, 2, 3, 4, SILENCE, 6, 7, 8, 9, 10]);
    const stats = near.session.stats();
    expect(stats).toMatchObject({ packetsReceived: 10, packetsLost: 1, lateOrDuplicate: 1 });
    expect(stats.jitterMs).toBeGreaterThan(0);
  });

  it('on hold sends nothing, yet plays its queue on the clock: marks fire, audio still comes in', async () => {
    const timers = new FakeTimers(1000);
    const far = await raw();
    const near = await session(timers, far.port, { media: { direction: 'recvonly', hold: true } });
    near.session.media(speech(320, 3));
    near.session.mark('said');
    for (let sequence = 0; sequence < 5; sequence++) {
      await far.send(audioPacket(sequence, speech(160, sequence)), near.port);
      await waitFor(() => near.session.stats().packetsReceived === sequence + 1);
      await run(timers, 20);
    }
    await run(timers, 100);
    // Marks still say when the audio would have played: the runtime behaves the same on hold.
    expect(near.marks.map((m) => m.name)).toEqual(['said']);
    expect(trimmed(concat(near.audio))).toHaveLength(5 * 160);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(far.rtp).toEqual([]);
    expect(near.session.stats().packetsSent).toBe(0);
  });

  it('gives an exception from a callback to onError and goes on', async () => {
    const timers = new FakeTimers(1000);
    const far = await raw();
    let frames = 0;
    const near = await session(timers, far.port, {
      onAudio: () => {
        frames += 1;
        throw new Error(`frame ${frames} refused`);
      },
      onDigit: () => {
        throw new Error('no keys here');
      },
    });
    for (let sequence = 0; sequence < 4; sequence++) {
      await far.send(audioPacket(sequence, speech(160, sequence)), near.port);
      await waitFor(() => near.session.stats().packetsReceived === sequence + 1);
      await run(timers, 20);
    }
    const key = encodeRtp({
      payloadType: 101,
      sequence: 4,
      timestamp: 9999,
      ssrc: 0x5eed,
      payload: Uint8Array.of(1, 10, 0, 160),
    });
    await far.send(key, near.port);
    await waitFor(() => near.session.stats().packetsReceived === 5);
    await run(timers, 100);
    expect(frames).toBeGreaterThanOrEqual(5);
    const messages = near.errors.map((error) => (error as Error).message);
    expect(messages.filter((m) => m === 'no keys here')).toHaveLength(1);
    expect(messages.filter((m) => m.endsWith('refused'))).toHaveLength(frames);
    expect(messages).toHaveLength(frames + 1);
  });

  it('survives its sockets being closed under it, and closes all the same', async () => {
    const timers = new FakeTimers(1000);
    const far = await raw();
    const pair = await ports.allocate();
    const errors: unknown[] = [];
    const near = new RtpSession({
      sockets: pair,
      media: mediaTo(far.port),
      timers,
      onError: (e) => errors.push(e),
    });
    await ports.release(pair);
    timers.runUntil(timers.now() + 100);
    expect(errors.length).toBeGreaterThan(0);
    await near.close();
    expect(timers.pending).toBe(0);
  });

  it('speaks A-law under the payload type the far end chose, with A-law silence', async () => {
    const timers = new FakeTimers(1000);
    const far = await raw();
    const media = {
      codec: 'PCMA',
      payloadType: 8,
      receivePayloadTypes: { audio: 8, telephoneEvent: 101 },
    } as const;
    const near = await session(timers, far.port, { media });
    near.session.media(speech(100, 1));
    await far.send(
      encodeRtp({ payloadType: 8, sequence: 1, timestamp: 0, ssrc: 1, payload: speech(160, 2) }),
      near.port,
    );
    await far.send(
      encodeRtp({ payloadType: 0, sequence: 2, timestamp: 160, ssrc: 1, payload: speech(160, 3) }),
      near.port,
    );
    await waitFor(() => near.session.stats().packetsReceived + near.session.stats().rejected === 2);
    await run(timers, 100, () => far.rtp.length === near.session.stats().packetsSent);
    expect(near.session.stats()).toMatchObject({ packetsReceived: 1, rejected: 1 });
    expect(far.rtp.every((r) => r.packet.payloadType === 8)).toBe(true);
    expect(far.rtp[1]!.packet.payload.subarray(0, 100)).toEqual(speech(100, 1));
    expect(far.rtp[1]!.packet.payload.subarray(100)).toEqual(new Uint8Array(60).fill(0xd5));
    expect(far.rtp[0]!.packet.payload).toEqual(new Uint8Array(160).fill(0xd5));
    expect(near.audio[0]).toEqual(speech(160, 2));
  });

  it('ignores garbage on both ports without a throw', async () => {
    const timers = new FakeTimers(1000);
    const far = await raw();
    const near = await session(timers, far.port);
    const garbage = [
      Uint8Array.of(),
      Uint8Array.of(0x80, 0, 1),
      Uint8Array.from({ length: 200 }, (_, i) => (i * 37) & 0xff),
      encodeRtcpReport({ ssrc: 1, cname: 'x' }),
      encodeRtp({ payloadType: 96, sequence: 1, timestamp: 1, ssrc: 9, payload: speech(160, 1) }),
      Uint8Array.of(0x40, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1),
    ];
    for (const datagram of garbage) await far.send(datagram, near.port);
    for (const datagram of garbage) await far.send(datagram, near.port + 1);
    await waitFor(() => near.session.stats().rejected === garbage.length);
    await run(timers, 100);
    expect(near.errors).toEqual([]);
    expect(near.session.stats().packetsReceived).toBe(0);
    expect(near.audio).toEqual([]);
    // The garbage latched nothing.
    expect(near.session.remote.port).toBe(far.port);
  });

  it('sends RTCP sender reports every 2.5-7.5 s and reads the far end’s report on our stream', async () => {
    const timers = new FakeTimers(1000);
    const far = await raw();
    const randoms = [0, 0.999, 0.5];
    const near = await session(timers, far.port, {
      random: () => randoms.shift() ?? 0.5,
      media: { remoteRtcpPort: far.port },
    });
    const reportTimes: number[] = [];
    far.socket.on('message', (data) => {
      if (!decodeRtp(data).ok) reportTimes.push(timers.now());
    });
    const sentAll = () => {
      const stats = near.session.stats();
      return far.rtp.length === stats.packetsSent && far.rtcp.length === stats.reportsSent;
    };
    await run(timers, 11_000, sentAll);
    // 1000 + 2500, then + 7495 (found by the 20 ms step that reaches 10,995).
    expect(reportTimes).toEqual([3500, 11_000]);
    const [first] = far.rtcp;
    expect(first!.map((p) => p.type)).toEqual(['sr', 'sdes']);
    const sr = first![0] as Extract<RtcpPacket, { type: 'sr' }>;
    expect(sr.ssrc).toBe(near.session.ssrc);
    // The packets sent by 3500 (the one due at 3500 may go just before or after the report).
    expect([125, 126]).toContain(sr.sender.packetCount);
    expect(sr.sender.octetCount).toBe(sr.sender.packetCount * 160);
    expect(sr.sender.ntpMs).toBe(1_700_000_000_000 + 3500);
    expect(sr.reports).toEqual([]);

    // The far end's RR about our stream, echoing our SR 1 s later.
    const rr = encodeRtcpReport({
      ssrc: 0x5eed,
      cname: 'far',
      reports: [
        {
          ssrc: near.session.ssrc,
          fractionLost: 64,
          cumulativeLost: 12,
          extendedHighestSequence: 1000,
          jitter: 80,
          lastSenderReport: sr.sender.ntpMiddle,
          delaySinceLastSenderReport: 65536 / 2,
        },
      ],
    });
    await far.send(rr, near.port + 1);
    await waitFor(() => near.reports.length === 1, 'the report');
    const [report] = near.reports;
    expect(report).toMatchObject({ fractionLost: 0.25, cumulativeLost: 12, jitterMs: 10 });
    // Our SR went at 3500, the RR is read now after a 500 ms delay at the far end.
    expect(report!.roundTripMs).toBeCloseTo(timers.now() - 3500 - 500, 0);
    expect(near.session.stats().remoteLoss).toEqual(report);
  });

  it('exchanges SR and report blocks between two sessions', async () => {
    const timers = new FakeTimers(1000);
    const { a, b, exchanged } = await call(timers, { rtcpIntervalMs: 1000, random: () => 0.5 });
    a.session.media(speech(1600, 2));
    await run(timers, 1000, exchanged);
    // Each sent an SR at 2000 with a block on the other's stream (no SR seen yet: no round trip).
    expect(a.reports).toHaveLength(1);
    expect(b.reports).toHaveLength(1);
    expect(a.reports[0]!.roundTripMs).toBeUndefined();
    await run(timers, 1000, exchanged);
    expect(a.reports).toHaveLength(2);
    expect(b.reports).toHaveLength(2);
    for (const heard of [a, b]) {
      const last = heard.reports.at(-1)!;
      expect(last).toMatchObject({ fractionLost: 0, cumulativeLost: 0 });
      // Loopback on a hand-driven clock: the round trip is the rounding of NTP fractions.
      expect(last.roundTripMs).toBeGreaterThanOrEqual(0);
      expect(last.roundTripMs).toBeLessThan(1);
    }
  });

  it('close() sends RTCP BYE, and leaves no socket or timer behind (real time)', async () => {
    const resources = () => {
      const all = process.getActiveResourcesInfo();
      return {
        udp: all.filter((r) => r === 'UDPWrap').length,
        timers: all.filter((r) => r === 'Timeout').length,
      };
    };
    // Sockets and timers of the tests before are gone once their close callbacks have run.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const before = resources();
    const rtpPorts = new PortRange({ min: BASE + 64, max: BASE + 79, host: HOST });
    const pairA = await rtpPorts.allocate();
    const pairB = await rtpPorts.allocate();
    const heardByB: Uint8Array[] = [];
    let byes = 0;
    const a = new RtpSession({ sockets: pairA, media: mediaTo(pairB.port) });
    const b = new RtpSession({
      sockets: pairB,
      media: mediaTo(pairA.port),
      onAudio: (frame) => heardByB.push(Uint8Array.from(frame)),
      onBye: () => {
        byes += 1;
      },
    });
    const during = resources();
    expect(during.udp).toBe(before.udp + 4);
    // Each session's pacer, playout and RTCP timers.
    expect(during.timers).toBeGreaterThanOrEqual(before.timers + 6);
    a.media(speech(800, 4));
    await waitFor(() => trimmed(concat(heardByB)).length === 800, 'the audio');
    expect(trimmed(concat(heardByB))).toEqual(speech(800, 4));
    await a.close('bye now');
    await waitFor(() => byes === 1, 'the BYE');
    await b.close();
    await rtpPorts.release(pairA);
    await rtpPorts.release(pairB);
    expect(rtpPorts.inUse).toBe(0);
    // libuv drops a closed handle on its next turn: give it a few.
    const deadline = Date.now() + 1000;
    while (resources().udp > before.udp && Date.now() < deadline) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    const after = resources();
    expect(after.udp).toBe(before.udp);
    // The test runner may hold a timer of its own before, never one of ours after.
    expect(after.timers).toBeLessThanOrEqual(before.timers);
  });
});

describe('the RTP port range', () => {
  it('skips a pair whose RTP or RTCP port is busy, rotates, and says when it is exhausted', async () => {
    const min = BASE + 80;
    const range = new PortRange({ min, max: min + 5, host: HOST });
    const busy = async (port: number) => {
      const socket = dgram.createSocket('udp4');
      await new Promise<void>((resolve) => socket.bind(port, HOST, resolve));
      cleanups.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
    };
    await busy(min);
    await busy(min + 5);
    const first = await range.allocate();
    cleanups.push(() => range.release(first));
    expect(first.port).toBe(min + 2);
    expect(first.rtcp.address().port).toBe(min + 3);
    expect(first.rtp.address()).toMatchObject({ address: HOST, port: min + 2 });
    await expect(range.allocate()).rejects.toThrow(PortRangeExhaustedError);
    await expect(range.allocate()).rejects.toThrow(`no free RTP/RTCP port pair in ${min}-${min + 5}`);
    // The busy pairs were left as they were: the skipped RTP port of the last pair is free again.
    await busy(min + 4);
    await range.release(first);
    expect(range.inUse).toBe(0);
    const again = await range.allocate();
    cleanups.push(() => range.release(again));
    expect(again.port).toBe(min + 2);
  });

  it('walks on from the last pair it gave, so a port just released is the last taken again', async () => {
    const min = BASE + 86;
    const range = new PortRange({ min, max: min + 5, host: HOST });
    const taken: number[] = [];
    for (let i = 0; i < 4; i++) {
      const pair = await range.allocate();
      taken.push(pair.port);
      await range.release(pair);
    }
    expect(taken).toEqual([min, min + 2, min + 4, min]);
    const [one, two] = [await range.allocate(), await range.allocate()];
    cleanups.push(
      () => range.release(one),
      () => range.release(two),
    );
    expect([one.port, two.port]).toEqual([min + 2, min + 4]);
  });

  it('refuses a range without an even start or a pair', () => {
    expect(() => new PortRange({ min: 30001, max: 30010 })).toThrow(/even/);
    expect(() => new PortRange({ min: 30000, max: 30000 })).toThrow(/no pair/);
    expect(() => new PortRange({ min: 80, max: 100 })).toThrow(/1024-65535/);
  });
});
