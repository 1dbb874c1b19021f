/**
 * The conformance kit of a carrier's media stream: what every carrier wire must do through the real
 * media route (`/media-stream/{call_id}`) of a listening platform whose call runtime records what
 * reaches it. The carrier's side is played by the same PhoneWire its simulator's phone uses
 * (`src/sim/phone-wire.ts`), so a new carrier is one wire (`CarrierMediaWire`), one phone wire and a
 * target below — and the kit proves they speak to each other as the runtime needs:
 *
 * - a proven stream reaches the runtime once, with its start (stream id, carrier call id, format),
 *   then the caller's audio in order and complete, key presses, and `ended` once, last;
 * - the runtime's audio plays at the phone in real time, a mark comes back once the audio before it
 *   has played (not before), a clear stops what is playing and later audio plays again;
 * - the caller hanging up ends the stream with `stop`, the socket closing with `closed`, the runtime
 *   closing it closes the socket;
 * - a wrong token, another call's token, no token, a malformed message first, a malformed message
 *   later: refused (1008, one generic reason), nothing of a refused stream reaching the runtime.
 *
 * Each carrier runs it in its own test file with a `CarrierMediaTarget` (carrier_a:
 * `test/carrier-a-media.test.ts`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { CarrierId } from '../../src/providers/ids.js';
import { SimulatedPhone } from '../../src/sim/phone.js';
import type { PhoneMessage, PhoneStreamIds, PhoneWireFactory } from '../../src/sim/phone-wire.js';
import { type AudioFormat, audioLevel, durationMs, encodeAudio, pcm16ToUlaw } from '../../src/voice/audio.js';
import { REFUSED_REASON } from '../../src/voice/media-stream.js';
import { Factories } from './factories.js';
import { startTestPlatform, type TestPlatform, waitFor } from './harness.js';
import { type RecordedStream, RecordingRuntime } from './recording-runtime.js';

/** A call whose stream may connect now, and how its carrier connects it. */
export interface StreamableCall {
  callId: number;
  /** The stream URL as the carrier connects to it (no token in it unless the carrier keeps one there). */
  url: string;
  /** The single-call token the answer instructions or the dial gave. */
  token: string;
  /** The carrier's id of the call, as its stream names it. */
  callSid: string;
  /**
   * How the carrier would connect with `token` in place of the real one (`null`: none at all): the
   * upgrade's headers (a signature, a token header) and the phone wire's stream ids.
   */
  connectAs(token: string | null): { headers: Record<string, string>; ids: PhoneStreamIds };
}

export interface CarrierMediaTarget {
  carrier: CarrierId;
  /** What the carrier streams and plays. */
  format: AudioFormat;
  /** The carrier's side of the stream. */
  wire: PhoneWireFactory;
  /** Starts the carrier's simulator; returns the platform's environment pointing at it. */
  start(): Promise<Record<string, string>>;
  stop(): Promise<void>;
  /** A call of a fresh organization whose stream is expected now. */
  call(t: TestPlatform, f: Factories): Promise<StreamableCall>;
  /** Something the carrier never sends (for the protocol-error cases). */
  malformed: PhoneMessage;
  /**
   * How the stream ends when the caller hangs up: `stop` where the carrier says so first (carrier_a),
   * `closed` where it only closes the socket (carrier_c). Default `stop`.
   */
  hangUpEnds?: 'stop' | 'closed';
}

/** A caller frame whose every sample is `level` (μ-law 8 kHz, 20 ms): its level survives any wire. */
function levelFrame(level: number): Uint8Array {
  return pcm16ToUlaw(new Int16Array(160).fill(level));
}

/** `ms` of a 440 Hz tone in `format`. */
function tone(format: AudioFormat, ms: number): Uint8Array {
  const samples = new Int16Array((format.sampleRate * ms) / 1000);
  for (let i = 0; i < samples.length; i++)
    samples[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / format.sampleRate));
  return encodeAudio(format, samples);
}

interface RawStream {
  socket: WebSocket;
  closed: Promise<{ code: number; reason: string }>;
  send(message: PhoneMessage): void;
}

/** A bare socket speaking the carrier's wire, for the cases a well-behaved phone never makes. */
async function rawStream(url: string, headers: Record<string, string>): Promise<RawStream> {
  const socket = new WebSocket(url, { headers });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.on('close', (code, reason) => resolve({ code, reason: String(reason) })),
  );
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return { socket, closed, send: (message) => socket.send(message) };
}

export function runCarrierMediaConformance(target: CarrierMediaTarget): void {
  const runtime = new RecordingRuntime();
  let t: TestPlatform;
  let f: Factories;

  beforeAll(async () => {
    const env = await target.start();
    t = await startTestPlatform(env, { listen: true, callRuntime: runtime });
    f = new Factories(t);
  });
  afterAll(async () => {
    await target.stop();
    await t?.close();
  });

  const phoneFor = (call: StreamableCall, token: string | null = call.token) => {
    const { headers, ids } = call.connectAs(token);
    return new SimulatedPhone({
      url: call.url,
      headers,
      callSid: ids.callSid,
      accountSid: ids.accountSid,
      streamSid: ids.streamSid,
      customParameters: ids.parameters,
      wire: target.wire,
    });
  };
  const attachedTo = (callId: number) => waitFor(() => runtime.of(callId)[0], 5000);
  const mediaOf = (stream: RecordedStream) =>
    stream.events.flatMap((event) => (event.type === 'media' ? [event.audio] : []));

  const refusals = (since: number): string[] =>
    t.logs
      .slice(since)
      .map((line) => JSON.parse(line) as { msg?: string; reason?: string })
      .filter((line) => line.msg === 'media stream refused')
      .map((line) => line.reason ?? '');

  describe(`${target.carrier} media stream: a proven stream`, () => {
    it("reaches the runtime once, with its start, then the caller's audio in order and complete, and key presses", async () => {
      const call = await target.call(t, f);
      const phone = phoneFor(call);
      await phone.connect();
      const attached = await attachedTo(call.callId);
      expect(attached.connection).toMatchObject({
        callId: call.callId,
        carrier: target.carrier,
        start: { callSid: call.callSid, format: target.format },
      });
      // Twenty frames of rising level: whatever the wire does on the way (reorders, resamples), the
      // runtime gets them back in order.
      const rising = new Uint8Array(20 * 160);
      for (let i = 0; i < 20; i++) rising.set(levelFrame(500 + i * 400), i * 160);
      await phone.say(rising);
      phone.dtmf('7');
      await waitFor(() => attached.events.some((event) => event.type === 'dtmf'), 5000);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const frames = mediaOf(attached);
      const levels = frames.map((audio) => audioLevel(target.format, audio));
      const loud = levels.filter((level) => level >= 400);
      expect(loud.length).toBeGreaterThanOrEqual(19);
      for (let i = 1; i < loud.length; i++) expect(loud[i]!).toBeGreaterThanOrEqual(loud[i - 1]! - 50);
      expect(attached.events.filter((event) => event.type === 'dtmf')).toEqual([
        { type: 'dtmf', digit: '7' },
      ]);
      await phone.hangUp();
      await waitFor(() => attached.events.at(-1)?.type === 'ended', 5000);
      expect(attached.events.filter((event) => event.type === 'ended')).toEqual([
        { type: 'ended', reason: target.hangUpEnds ?? 'stop' },
      ]);
      // Nothing lost: once the stream has ended (nothing left on the way), the audio that reached the
      // runtime lasts as long as what the phone sent.
      const heardMs = mediaOf(attached).reduce(
        (sum, audio) => sum + durationMs(target.format, audio.length),
        0,
      );
      expect(Math.abs(heardMs - phone.framesSent * 20)).toBeLessThanOrEqual(60);
      expect(runtime.of(call.callId)).toHaveLength(1);
      expect(t.logs.join('\n')).not.toContain(call.token);
    });

    it('plays the runtime’s audio in real time, echoes a mark once its audio has played, and a clear stops it', async () => {
      const call = await target.call(t, f);
      const phone = phoneFor(call);
      await phone.connect();
      const attached = await attachedTo(call.callId);
      const send = attached.connection.send;
      const sentAt = performance.now();
      send.media(tone(target.format, 600));
      send.mark('first');
      const marked = await waitFor(
        () => attached.events.find((event) => event.type === 'mark' && event.name === 'first'),
        5000,
      );
      const markMs = performance.now() - sentAt;
      expect(marked).toEqual({ type: 'mark', name: 'first' });
      // Not before the audio has played, and not long after.
      expect(markMs).toBeGreaterThanOrEqual(550);
      expect(markMs).toBeLessThan(1500);
      expect(phone.heardSegments.length).toBeGreaterThanOrEqual(1);

      // Four seconds queued, cleared after half a second: the phone stops hearing it.
      send.media(tone(target.format, 4000));
      send.mark('long');
      await new Promise((resolve) => setTimeout(resolve, 500));
      send.clear();
      await phone.waitForSilence({ ms: 400, timeoutMs: 3000 });
      const heardBefore = phone.playedBytes;
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(phone.playedBytes - heardBefore).toBeLessThan(160 * 10);
      // Later audio plays again, and its mark comes back.
      send.media(tone(target.format, 300));
      send.mark('after-clear');
      await waitFor(
        () => attached.events.find((event) => event.type === 'mark' && event.name === 'after-clear'),
        5000,
      );
      await phone.hangUp();
    });

    it('ends with `closed` when the socket closes without a hang-up, and closes when the runtime closes it', async () => {
      const first = await target.call(t, f);
      const { headers } = first.connectAs(first.token);
      const raw = await rawStream(first.url, headers);
      const wire = target.wire(first.connectAs(first.token).ids);
      for (const message of wire.opening()) raw.send(message);
      const attached = await attachedTo(first.callId);
      raw.socket.terminate();
      await waitFor(() => attached.events.at(-1)?.type === 'ended', 5000);
      expect(attached.events.at(-1)).toEqual({ type: 'ended', reason: 'closed' });

      const second = await target.call(t, f);
      const phone = phoneFor(second);
      await phone.connect();
      const other = await attachedTo(second.callId);
      other.connection.send.close();
      const close = await phone.waitForClose({ timeoutMs: 5000 });
      expect(close).toMatchObject({ code: 1000, by: 'platform' });
      await waitFor(() => other.events.at(-1)?.type === 'ended', 5000);
      expect(other.events.filter((event) => event.type === 'ended')).toHaveLength(1);
    });

    it('closes with 1008 on a message the carrier never sends, and ends with `error`', async () => {
      const call = await target.call(t, f);
      const { headers, ids } = call.connectAs(call.token);
      const raw = await rawStream(call.url, headers);
      for (const message of target.wire(ids).opening()) raw.send(message);
      const attached = await attachedTo(call.callId);
      const since = t.logs.length;
      raw.send(target.malformed);
      expect(await raw.closed).toEqual({ code: 1008, reason: REFUSED_REASON });
      expect(refusals(since)).toEqual([expect.stringMatching(/protocol error/)]);
      await waitFor(() => attached.events.at(-1)?.type === 'ended', 5000);
      expect(attached.events.at(-1)).toEqual({ type: 'ended', reason: 'error' });
    });
  });

  describe(`${target.carrier} media stream: refused before anything reaches the runtime`, () => {
    const refusedWith = async (call: StreamableCall, token: string | null, why: RegExp) => {
      const since = t.logs.length;
      const { headers, ids } = call.connectAs(token);
      const raw = await rawStream(call.url, headers);
      const wire = target.wire(ids);
      for (const message of wire.opening()) raw.send(message);
      for (let i = 0; i < 3; i++)
        for (const message of wire.media(i, i * 20, levelFrame(2000))) raw.send(message);
      expect(await raw.closed).toEqual({ code: 1008, reason: REFUSED_REASON });
      expect(refusals(since)).toEqual([expect.stringMatching(why)]);
      expect(runtime.of(call.callId)).toEqual([]);
    };

    it('without a token', async () => {
      await refusedWith(await target.call(t, f), null, /without a token|signature/);
    });

    it('with a wrong token', async () => {
      await refusedWith(await target.call(t, f), 'not-a-token', /token|signature/);
    });

    it("with another call's token", async () => {
      const first = await target.call(t, f);
      const second = await target.call(t, f);
      await refusedWith(second, first.token, /token|signature/);
    });

    it('with a malformed first message', async () => {
      const call = await target.call(t, f);
      const since = t.logs.length;
      const { headers } = call.connectAs(call.token);
      const raw = await rawStream(call.url, headers);
      raw.send(target.malformed);
      expect(await raw.closed).toEqual({ code: 1008, reason: REFUSED_REASON });
      expect(refusals(since)).toHaveLength(1);
      expect(runtime.of(call.callId)).toEqual([]);
    });
  });
}
