/**
 * The conformance suite every text-to-speech adapter runs against its simulator, over real loopback
 * sockets: the vendor's documented server messages (replayed by the simulator, parsed by the
 * adapter), a spoken sentence (audio of plausible length, then `final`), text chunks in order and
 * flush, voice settings and output format reaching the vendor, refused handshakes (401 permanent,
 * 429 retryable with its retry-after), a slow first byte, a stream cut mid-audio, and a barge-in
 * abort. A vendor's test file provides a rig (its adapter, simulator and golden cases) and calls
 * `runTtsConformance`.
 *
 * Vendors that take one whole input per request (`requestPerPiece`: tts_b, tts_c) have no handshake
 * and no end-of-stream message: their refusals come out of the stream's events once text is sent,
 * the vendor sees one request per flushed piece, and they run two more cases — requests overlap while
 * their audio stays in order, and a later piece's failure comes after the audio before it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../../src/providers/errors.js';
import type {
  Alignment,
  TtsAdapter,
  TtsEvent,
  TtsStream,
  TtsStreamOptions,
} from '../../src/providers/tts/types.js';
import { type AudioFormat, durationMs, MULAW_8K, ulawLevel } from '../../src/voice/audio.js';

/** How a scripted answer is sent, for vendors whose answers are HTTP responses. */
export interface GoldenAnswer {
  status?: number;
  headers?: Record<string, string>;
}

/**
 * A documented server message and what the adapter must make of it. `joined`: only the audio's
 * concatenation is compared (for a vendor whose audio is converted, so its chunking is the
 * adapter's own).
 */
export type GoldenCase = GoldenAnswer &
  (
    | {
        name: string;
        frames: string[];
        events: { audio: Uint8Array; alignment?: Alignment }[];
        final: boolean;
        joined?: boolean;
      }
    | { name: string; frames: string[]; error: { retryable: boolean; code: string } }
  );

/** What the vendor received on a stream, in the vendor-neutral terms the suite checks. */
export interface VendorSawStream {
  voiceId: string;
  modelId?: string;
  /** The vendor's own name of the audio format asked for. */
  outputFormat?: string;
  voiceSettings?: Record<string, unknown>;
  /**
   * The texts sent, in order (blank keep-alives left out). For `requestPerPiece` one per request, in
   * the order they arrived: requests in flight together may overtake each other on the way.
   */
  texts: string[];
  /** Flush messages (stream vendors; a request-per-piece vendor sees a flush as a request). */
  flushes?: number;
  /** The client said it had no more text (stream vendors). */
  ended?: boolean;
  closed: boolean;
  /** When each request arrived (`performance.now()`), for `requestPerPiece`. */
  requestTimes?: number[];
}

export interface TtsRig {
  adapter: TtsAdapter;
  /** Starts the simulator: its base URL and a key it accepts. */
  start(): Promise<{ baseUrl: string; apiKey: string }>;
  stop(): Promise<void>;
  golden: GoldenCase[];
  /** The next stream (or request) is answered with these raw frames (then the vendor closes). */
  replyNext(frames: string[], answer?: GoldenAnswer): void;
  /** The next handshake (or request, after `skip` answered ones) is refused with `status`. */
  refuseNext(status: number, retryAfterSeconds?: number, skip?: number): void;
  setFirstByteDelay(ms: number): void;
  /** The next stream's connection is cut (no close frame) after about `ms` of audio. */
  cutNextAfterAudio(ms: number): void;
  /** What the vendor received on the latest stream. */
  lastStream(): VendorSawStream;
  /** The vendor's name for `format` in its request. */
  formatName(format: AudioFormat): string;
  /** One request per flushed piece, no handshake (see the header). */
  requestPerPiece?: boolean;
  /** The next request for `text` waits this much longer before its first byte (`requestPerPiece`). */
  delayText?(text: string, ms: number): void;
  /** The status of the vendor's answer to an unknown key (401 unless the vendor says otherwise). */
  unknownKeyStatus?: number;
  /** Voice settings the vendor takes, as `lastStream()` reports them back. */
  voiceSettings?: Record<string, unknown>;
}

/** Speech is 50–100 ms per character; the bounds leave room for any vendor's pace. */
const PLAUSIBLE_MS_PER_CHARACTER = { min: 25, max: 200 };
const SENTENCE = 'Thanks for calling, how can I help you today?';

async function collect(stream: TtsStream): Promise<TtsEvent[]> {
  const events: TtsEvent[] = [];
  for await (const event of stream.events) events.push(event);
  return events;
}

const audioOf = (events: TtsEvent[]) => events.flatMap((event) => (event.type === 'audio' ? [event] : []));

const spokenText = (events: TtsEvent[]) =>
  audioOf(events)
    .map((event) => event.alignment?.chars.join('') ?? '')
    .join('');

async function rejection(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

export function runTtsConformance(name: string, rig: TtsRig): void {
  const perPiece = rig.requestPerPiece === true;
  // A case that does not apply to the vendor's kind is not registered at all (not a skipped test).
  type Case = (name: string, test: () => Promise<void>) => void;
  const streamOnly: Case = perPiece ? () => {} : it;
  const perPieceOnly: Case = perPiece ? it : () => {};

  /** A refusal: of the handshake for stream vendors, of the first request for the others. */
  async function refusalOf(options: TtsStreamOptions): Promise<ProviderError> {
    if (!perPiece) return rejection(rig.adapter.open(options));
    const stream = await rig.adapter.open(options);
    stream.sendText('Hello.');
    stream.end();
    return rejection(collect(stream));
  }

  describe(`${name}: TTS conformance`, () => {
    let baseUrl = '';
    let apiKey = '';

    beforeAll(async () => {
      ({ baseUrl, apiKey } = await rig.start());
    });
    afterAll(() => rig.stop());

    const options = (overrides: Partial<TtsStreamOptions> = {}): TtsStreamOptions => ({
      apiKey,
      baseUrl,
      voiceId: 'voice-conformance',
      modelId: 'model-conformance',
      format: MULAW_8K,
      voiceSettings: {},
      signal: new AbortController().signal,
      ...overrides,
    });

    describe('parses the messages the vendor documents', () => {
      for (const golden of rig.golden) {
        it(golden.name, async () => {
          rig.replyNext(golden.frames, { status: golden.status, headers: golden.headers });
          const stream = await rig.adapter.open(options());
          if (perPiece) {
            stream.sendText('Hello.');
            stream.end();
          }
          if ('error' in golden) {
            const error = await rejection(collect(stream));
            expect(error.retryable).toBe(golden.error.retryable);
            expect(error.code).toBe(golden.error.code);
            return;
          }
          const events = await collect(stream);
          if (golden.joined) {
            const joined = (audio: { audio: Uint8Array }[]) =>
              Buffer.concat(audio.map((event) => event.audio));
            expect(joined(audioOf(events))).toEqual(joined(golden.events));
          } else {
            expect(audioOf(events)).toEqual(golden.events.map((event) => ({ type: 'audio', ...event })));
          }
          expect(events.at(-1)?.type === 'final').toBe(golden.final);
        });
      }
    });

    it('speaks a sentence: audible audio of plausible length, then final', async () => {
      const stream = await rig.adapter.open(options());
      stream.sendText(SENTENCE);
      stream.end();
      const events = await collect(stream);
      expect(events.at(-1)).toEqual({ type: 'final' });
      expect(events.filter((event) => event.type === 'final')).toHaveLength(1);
      const audio = Buffer.concat(audioOf(events).map((event) => event.audio));
      const ms = durationMs(MULAW_8K, audio.length);
      expect(ms).toBeGreaterThan(SENTENCE.length * PLAUSIBLE_MS_PER_CHARACTER.min);
      expect(ms).toBeLessThan(SENTENCE.length * PLAUSIBLE_MS_PER_CHARACTER.max);
      expect(ulawLevel(audio)).toBeGreaterThan(1000);
      const { startedAt, connectedAt, firstByteAt, endedAt } = stream.timing;
      expect(connectedAt).toBeGreaterThanOrEqual(startedAt);
      expect(firstByteAt).toBeGreaterThanOrEqual(connectedAt!);
      expect(endedAt).toBeGreaterThanOrEqual(firstByteAt!);
      expect(rig.lastStream()).toMatchObject({
        texts: [expect.stringContaining(SENTENCE)],
        ...(perPiece ? {} : { ended: true }),
      });
    });

    streamOnly(
      'sends text chunks in order, and a flush speaks what was sent without ending the stream',
      async () => {
        const stream = await rig.adapter.open(options());
        const reader = stream.events[Symbol.asyncIterator]();
        stream.sendText('One two three.');
        stream.sendText('Four five');
        stream.flush();
        // "Four five" ends no sentence: only the flush makes the vendor speak it before the end.
        const heard: TtsEvent[] = [];
        while (!spokenText(heard).includes('five')) {
          const step = await reader.next();
          expect(step.done).toBe(false);
          heard.push(step.value as TtsEvent);
        }
        expect(heard.every((event) => event.type === 'audio')).toBe(true);
        expect(rig.lastStream()).toMatchObject({ flushes: 1, ended: false });
        stream.sendText('Six.');
        stream.end();
        for (let step = await reader.next(); !step.done; step = await reader.next()) heard.push(step.value);
        expect(heard.at(-1)).toEqual({ type: 'final' });
        expect(spokenText(heard).replace(/\s+/g, ' ').trim()).toBe('One two three. Four five Six.');
        expect(rig.lastStream().texts.map((text) => text.trim())).toEqual([
          'One two three.',
          'Four five',
          'Six.',
        ]);
      },
    );

    perPieceOnly('sends one request per flushed piece, in order, before the end', async () => {
      const stream = await rig.adapter.open(options());
      const reader = stream.events[Symbol.asyncIterator]();
      stream.sendText('One two ');
      stream.sendText('three.');
      stream.flush();
      stream.sendText('Four five');
      stream.flush();
      stream.flush();
      // Each flush is a request of its own, sent without waiting for the end (an empty flush is none).
      await expect.poll(() => [...rig.lastStream().texts].sort()).toEqual(['Four five', 'One two three.']);
      const first = await reader.next();
      expect(first.value).toMatchObject({ type: 'audio' });
      stream.sendText('Six.');
      stream.end();
      const heard: TtsEvent[] = [first.value as TtsEvent];
      for (let step = await reader.next(); !step.done; step = await reader.next()) heard.push(step.value);
      expect(heard.at(-1)).toEqual({ type: 'final' });
      expect([...rig.lastStream().texts].sort()).toEqual(['Four five', 'One two three.', 'Six.']);
      const audio = Buffer.concat(audioOf(heard).map((event) => event.audio));
      const ms = durationMs(MULAW_8K, audio.length);
      expect(ms).toBeGreaterThan('One two three.Four fiveSix.'.length * PLAUSIBLE_MS_PER_CHARACTER.min);
    });

    it('passes the voice, model, voice settings and output format to the vendor', async () => {
      const voiceSettings = rig.voiceSettings ?? { stability: 0.4, similarity_boost: 0.7, speed: 1.1 };
      const stream = await rig.adapter.open(
        options({ voiceId: 'voice-b', modelId: 'model-b', voiceSettings }),
      );
      stream.sendText('Hello.');
      stream.end();
      await collect(stream);
      expect(rig.lastStream()).toMatchObject({
        voiceId: 'voice-b',
        modelId: 'model-b',
        outputFormat: rig.formatName(MULAW_8K),
        voiceSettings,
      });
    });

    it('asks for 16-bit linear audio at 16 kHz when the carrier wants it', async () => {
      const format: AudioFormat = { encoding: 'linear16', sampleRate: 16000 };
      const stream = await rig.adapter.open(options({ format }));
      stream.sendText('Hello.');
      stream.end();
      const audio = audioOf(await collect(stream));
      expect(rig.lastStream().outputFormat).toBe(rig.formatName(format));
      const bytes = audio.reduce((sum, event) => sum + event.audio.length, 0);
      expect(bytes % 2).toBe(0);
      expect(durationMs(format, bytes)).toBeGreaterThan('Hello.'.length * PLAUSIBLE_MS_PER_CHARACTER.min);
    });

    it(`refuses a key the vendor does not know: permanent, ${rig.unknownKeyStatus ?? 401}`, async () => {
      const error = await refusalOf(options({ apiKey: 'not-a-key-of-the-vendor' }));
      expect(error.retryable).toBe(false);
      expect(error.status).toBe(rig.unknownKeyStatus ?? 401);
      expect(error.message).not.toContain('not-a-key-of-the-vendor');
    });

    it('takes a 429 as retryable, with its retry-after', async () => {
      rig.refuseNext(429, 3);
      const error = await refusalOf(options());
      expect(error.retryable).toBe(true);
      expect(error.status).toBe(429);
      expect(error.options.retryAfterSeconds).toBe(3);
    });

    it('takes a 503 as retryable', async () => {
      rig.refuseNext(503);
      const error = await refusalOf(options());
      expect(error).toMatchObject({ retryable: true, status: 503 });
    });

    it('waits out a slow first byte, and its timing shows it', async () => {
      rig.setFirstByteDelay(300);
      try {
        const stream = await rig.adapter.open(options());
        stream.sendText('Slow.');
        stream.end();
        const events = await collect(stream);
        expect(events.at(-1)).toEqual({ type: 'final' });
        // Timers may fire a millisecond early; the delay is counted from when the text was sent.
        expect(stream.timing.firstByteAt! - stream.timing.connectedAt!).toBeGreaterThanOrEqual(295);
      } finally {
        rig.setFirstByteDelay(0);
      }
    });

    it('fails with a retryable error when the connection is cut mid-stream', async () => {
      rig.cutNextAfterAudio(200);
      const stream = await rig.adapter.open(options());
      const reader = stream.events[Symbol.asyncIterator]();
      const events: TtsEvent[] = [];
      stream.sendText(SENTENCE);
      // A vendor that answers a piece whole can only be cut on a later piece, after audio was heard.
      if (perPiece) {
        stream.flush();
        const first = await reader.next();
        events.push(first.value as TtsEvent);
        stream.sendText(SENTENCE);
      }
      stream.end();
      const error = await rejection(
        (async () => {
          for (let step = await reader.next(); !step.done; step = await reader.next())
            events.push(step.value);
        })(),
      );
      expect(error.retryable).toBe(true);
      expect(audioOf(events).length).toBeGreaterThan(0);
      expect(events.some((event) => event.type === 'final')).toBe(false);
    });

    perPieceOnly("overlaps the pieces' requests, yet passes their audio on in order", async () => {
      const slow = 'The first piece is slow to start.';
      rig.delayText?.(slow, 400);
      const stream = await rig.adapter.open(options());
      const sentAt = performance.now();
      stream.sendText(slow);
      stream.flush();
      stream.sendText('Second.');
      stream.end();
      const reader = stream.events[Symbol.asyncIterator]();
      const first = await reader.next();
      const firstAt = performance.now();
      expect(first.value).toMatchObject({ type: 'audio' });
      // The quick second piece was asked for before the slow first one answered…
      const seen = rig.lastStream();
      expect([...seen.texts].sort()).toEqual(['Second.', slow]);
      expect(seen.requestTimes).toHaveLength(2);
      expect(Math.max(...seen.requestTimes!)).toBeLessThan(firstAt);
      // …and still nothing was passed on before the first piece's own audio.
      expect(firstAt - sentAt).toBeGreaterThanOrEqual(395);
      const rest: TtsEvent[] = [];
      for (let step = await reader.next(); !step.done; step = await reader.next()) rest.push(step.value);
      expect(rest.at(-1)).toEqual({ type: 'final' });
    });

    perPieceOnly('fails after the audio already passed on when a later piece is refused', async () => {
      rig.refuseNext(500, undefined, 1);
      const stream = await rig.adapter.open(options());
      stream.sendText(SENTENCE);
      stream.flush();
      stream.sendText('And then more.');
      stream.end();
      const events: TtsEvent[] = [];
      const error = await rejection(
        (async () => {
          for await (const event of stream.events) events.push(event);
        })(),
      );
      expect(error).toMatchObject({ retryable: true, status: 500 });
      const ms = durationMs(MULAW_8K, Buffer.concat(audioOf(events).map((event) => event.audio)).length);
      // All of the first piece was heard before the failure.
      expect(ms).toBeGreaterThan(SENTENCE.length * PLAUSIBLE_MS_PER_CHARACTER.min);
      expect(events.some((event) => event.type === 'final')).toBe(false);
    });

    it('on abort closes the stream at once and ends quietly, with no more audio', async () => {
      const controller = new AbortController();
      const stream = await rig.adapter.open(options({ signal: controller.signal }));
      const reader = stream.events[Symbol.asyncIterator]();
      stream.sendText(`${SENTENCE} ${SENTENCE} ${SENTENCE}`);
      stream.end();
      const first = await reader.next();
      expect(first.value).toMatchObject({ type: 'audio' });
      // Let more audio arrive unread, so there is some in flight to drop.
      await new Promise((resolve) => setTimeout(resolve, 150));
      controller.abort();
      // Audio already queued is dropped too: the very next step is the end.
      expect(await reader.next()).toEqual({ value: undefined, done: true });
      await expect.poll(() => rig.lastStream().closed).toBe(true);
      stream.sendText('Too late.');
      expect(rig.lastStream().texts).toHaveLength(1);
    });

    it('ends quietly when aborted while waiting for the first audio', async () => {
      const controller = new AbortController();
      const stream = await rig.adapter.open(options({ signal: controller.signal }));
      const pending = collect(stream);
      stream.sendText('Never heard.');
      controller.abort();
      expect(await pending).toEqual([]);
    });
  });
}
