/**
 * The conformance suite of the speech-to-text kind: the cases every STT adapter passes against its
 * simulator, over real loopback WebSockets. The vendor's golden messages (from its documentation,
 * under test/fixtures/vendors/<vendor>/) go through the adapter's parser; then streams carry the
 * recorded caller utterances (test/fixtures/voice/*.ulaw, 20 ms frames, faster than real time: the
 * simulators time everything by the audio they receive) and the cases check transcripts, the order
 * interim → final → utterance end, every setting reaching the vendor (read back from its own
 * parameters), each carrier's format (μ-law, A-law, 16-bit PCM at 16 kHz), typed failures (401
 * permanent, 429 with retry-after, 5xx, slow handshake, unreachable vendor, a connection cut or closed
 * mid-stream), abort, keep-alive, finalize and close. A vendor's test file calls `describeSttConformance`.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../../src/providers/errors.js';
import type { SttAdapter, SttEvent, SttStreamOptions } from '../../src/providers/stt/types.js';
import { ALAW_8K, FRAME_MS, LINEAR16_16K, MULAW_8K, silence as silenceOf } from '../../src/voice/audio.js';
import { inFormat, readUntil, silence, speak, speakIn, utterance, utteranceText } from './stt-speech.js';

export { inFormat, readUntil, silence, speak, speakIn, utterance, utteranceText };

/** What the suite asks of a vendor's simulator (each simulator has more of its own). */
export interface ScriptedSttSimulator {
  start(port?: number): Promise<string>;
  stop(): Promise<void>;
  addKey(key: string): void;
  setScript(key: string, utterances: string[]): void;
  failNext(key: string, failure: { status: number; retryAfter?: number }): void;
  dropAfter(ms: number | undefined): void;
  disconnect(code: number, reason: string): void;
  handshakeDelayMs: number;
  idleTimeoutMs: number;
  /** Delay before each message the simulator sends. */
  latencyMs: number;
}

/**
 * The settings a stream's handshake carried, read back from the vendor's own parameters into the
 * contract's terms (`endpointingMs` 0: endpointing off; `utteranceEndMs` 0: none asked for).
 */
export type SeenSettings = Pick<
  SttStreamOptions,
  | 'model'
  | 'language'
  | 'format'
  | 'endpointingMs'
  | 'utteranceEndMs'
  | 'punctuate'
  | 'smartFormat'
  | 'keyterms'
  | 'keywords'
> & { interimResults: boolean };

/** What a simulator saw of one stream, in the suite's terms. */
export interface SeenStream {
  settings: SeenSettings;
  keyterms: string[];
  keywords: Array<{ keyword: string; intensifier?: number }>;
  /** The utterance-end setting the handshake carried, if any. */
  utteranceEndMs: number | undefined;
  /** The control messages received, by the vendor's names, mapped: keepAlive, finalize, close. */
  controls: Array<'keepAlive' | 'finalize' | 'close' | 'other'>;
  bytesReceived: number;
  closed: boolean;
}

export interface SttConformanceTarget {
  adapter: SttAdapter;
  simulator: ScriptedSttSimulator;
  /** The adapter's parser of one vendor message. */
  parse(message: string): SttEvent | undefined;
  /** Golden messages (paths from the repository root) and the event each must become. */
  golden: Array<{ file: string; expected: SttEvent | undefined }>;
  /** A model that takes keyterms, and one that takes keywords. */
  models: { keyterms: string; keywords: string };
  /** The streams the simulator served for `key`, oldest first. */
  seen(key: string): SeenStream[];
  /** How the vendor closes a stream on bad audio (a permanent failure) and its error code. */
  permanentClose: { code: number; reason: string; vendorCode: string };
  /** The vendor's error code when it closes an idle stream (a retryable failure). */
  idleVendorCode: string;
}

const finals = (events: SttEvent[]) =>
  events.filter((e): e is Extract<SttEvent, { type: 'transcript' }> => e.type === 'transcript' && e.isFinal);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function failureOf(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await sleep(10);
  expect(condition(), what).toBe(true);
}

export function describeSttConformance(name: string, target: SttConformanceTarget): void {
  const { adapter, simulator: sim } = target;
  let baseUrl = '';
  let keys = 0;
  const newKey = () => {
    const key = `conformance-key-${++keys}-0123456789abcdef`;
    sim.addKey(key);
    return key;
  };
  const options = (key: string, extra: Partial<SttStreamOptions> = {}): SttStreamOptions => ({
    apiKey: key,
    baseUrl,
    model: target.models.keyterms,
    language: 'en-US',
    format: MULAW_8K,
    endpointingMs: 300,
    utteranceEndMs: 1000,
    punctuate: true,
    smartFormat: true,
    keywords: [],
    keyterms: [],
    signal: new AbortController().signal,
    connectTimeoutMs: 3000,
    ...extra,
  });

  describe(`${name}: STT conformance`, () => {
    beforeAll(async () => {
      baseUrl = await sim.start();
    });
    afterAll(() => sim.stop());

    it("parses the vendor's golden messages", () => {
      expect(target.golden.length).toBeGreaterThanOrEqual(5);
      for (const { file, expected } of target.golden)
        expect(target.parse(readFileSync(file, 'utf8')), file).toEqual(expected);
    });

    it('transcribes a recorded utterance with timing from its audio', async () => {
      const key = newKey();
      sim.setScript(key, [utteranceText('book-appointment')]);
      const stream = await adapter.open(options(key));
      const audio = utterance('book-appointment');
      await speak(stream, audio, silence(1500));
      const events = await readUntil(stream, (e) => e.type === 'utterance_end');
      const [final, ...more] = finals(events);
      expect(more).toEqual([]);
      expect(final).toMatchObject({
        text: utteranceText('book-appointment'),
        isFinal: true,
        speechFinal: true,
      });
      // The fixture speaks from its first frames and ends with about 0.3 s of silence.
      expect(final!.startSeconds).toBeLessThan(0.2);
      expect(final!.endSeconds).toBeGreaterThan(2.5);
      expect(final!.endSeconds).toBeLessThanOrEqual(audio.length / MULAW_8K.sampleRate);
      const { startedAt, connectedAt, firstByteAt } = stream.timing;
      expect(connectedAt).toBeGreaterThanOrEqual(startedAt);
      expect(firstByteAt).toBeGreaterThanOrEqual(connectedAt!);
      await stream.close();
      expect(target.seen(key)[0]!.bytesReceived).toBe(audio.length + silence(1500).length);
    });

    it('sends speech started, interims revealing the words, the speech final, then the utterance end', async () => {
      const key = newKey();
      sim.setScript(key, [utteranceText('three-oclock')]);
      const stream = await adapter.open(options(key));
      await speak(stream, utterance('three-oclock'), silence(1500));
      const events = await readUntil(stream, (e) => e.type === 'utterance_end');
      await stream.close();
      expect(events[0]?.type).toBe('speech_started');
      const firstFinal = events.findIndex((e) => e.type === 'transcript' && e.isFinal);
      const interims = events.slice(0, firstFinal).filter((e) => e.type === 'transcript');
      expect(interims.length).toBeGreaterThan(0);
      const text = utteranceText('three-oclock');
      for (const interim of interims) {
        expect(interim).toMatchObject({ isFinal: false, speechFinal: false });
        if (interim.type === 'transcript') expect(text.startsWith(interim.text)).toBe(true);
      }
      const final = events[firstFinal];
      expect(final).toMatchObject({ type: 'transcript', text, speechFinal: true });
      const end = events.at(-1);
      expect(events.indexOf(end!)).toBeGreaterThan(firstFinal);
      if (end?.type !== 'utterance_end' || final?.type !== 'transcript') throw new Error('out of order');
      expect(end.lastWordEndSeconds).toBeCloseTo(final.endSeconds, 1);
    });

    it('gives each speech segment the next utterance of the script', async () => {
      const key = newKey();
      sim.setScript(key, [utteranceText('uh-huh'), utteranceText('goodbye')]);
      const stream = await adapter.open(options(key));
      await speak(stream, utterance('uh-huh'), silence(1200), utterance('goodbye'), silence(1200));
      let ends = 0;
      const events = await readUntil(stream, (e) => e.type === 'utterance_end' && ++ends === 2);
      await stream.close();
      const speechFinals = finals(events).filter((e) => e.speechFinal);
      expect(speechFinals.map((e) => e.text)).toEqual([utteranceText('uh-huh'), utteranceText('goodbye')]);
      expect(speechFinals[1]!.startSeconds).toBeGreaterThan(speechFinals[0]!.endSeconds);
    });

    it('asks for keyterms or keywords as the model takes them, and no utterance end at 0', async () => {
      const key = newKey();
      const vocabulary = {
        keyterms: ['Switchboard', 'Acme Corp'],
        keywords: [{ keyword: 'Acme', intensifier: 3 }, { keyword: 'Zed' }],
      };
      const withKeyterms = await adapter.open(options(key, { ...vocabulary, model: target.models.keyterms }));
      await withKeyterms.close();
      const withKeywords = await adapter.open(
        options(key, { ...vocabulary, model: target.models.keywords, utteranceEndMs: 0 }),
      );
      await withKeywords.close();
      const [first, second] = target.seen(key);
      expect(first).toMatchObject({ keyterms: vocabulary.keyterms, keywords: [], utteranceEndMs: 1000 });
      expect(second).toMatchObject({
        keyterms: [],
        keywords: vocabulary.keywords,
        utteranceEndMs: undefined,
      });
    });

    it('carries every setting to the vendor as it was given', async () => {
      const key = newKey();
      const given: SeenSettings[] = [
        {
          model: target.models.keyterms,
          language: 'fr',
          format: MULAW_8K,
          endpointingMs: 750,
          utteranceEndMs: 2000,
          interimResults: true,
          punctuate: false,
          smartFormat: false,
          keyterms: ['Switchboard'],
          keywords: [],
        },
        {
          model: target.models.keywords,
          language: 'en-GB',
          format: ALAW_8K,
          // Endpointing off, and no interim results: then no utterance end can be asked for either.
          endpointingMs: 0,
          utteranceEndMs: 0,
          interimResults: false,
          punctuate: true,
          smartFormat: true,
          keyterms: [],
          keywords: [{ keyword: 'Acme', intensifier: 2 }],
        },
        {
          model: target.models.keyterms,
          language: 'en-US',
          format: LINEAR16_16K,
          endpointingMs: 10,
          utteranceEndMs: 1000,
          interimResults: true,
          punctuate: true,
          smartFormat: false,
          keyterms: [],
          keywords: [],
        },
      ];
      for (const settings of given) {
        const stream = await adapter.open(options(key, settings));
        await stream.close();
      }
      expect(target.seen(key).map((seen) => seen.settings)).toEqual(given);
    });

    it('asks for no utterance end without interim results (the vendor refuses it), and hears finals only', async () => {
      const key = newKey();
      sim.setScript(key, [utteranceText('three-oclock')]);
      const stream = await adapter.open(options(key, { interimResults: false, utteranceEndMs: 1000 }));
      await speak(stream, utterance('three-oclock'), silence(1500));
      const events = await readUntil(stream, (e) => e.type === 'transcript' && e.speechFinal);
      await stream.close();
      expect(target.seen(key)[0]!.settings).toMatchObject({ interimResults: false, utteranceEndMs: 0 });
      const transcripts = events.filter((e) => e.type === 'transcript');
      expect(transcripts.every((e) => e.type === 'transcript' && e.isFinal)).toBe(true);
      expect(transcripts.at(-1)).toMatchObject({ text: utteranceText('three-oclock'), speechFinal: true });
    });

    for (const format of [ALAW_8K, LINEAR16_16K]) {
      it(`transcribes a caller in ${format.encoding} at ${format.sampleRate} Hz, the carrier's own format`, async () => {
        const key = newKey();
        sim.setScript(key, [utteranceText('book-appointment')]);
        const stream = await adapter.open(options(key, { format }));
        const audio = inFormat(format, utterance('book-appointment'));
        const quiet = silenceOf(format, 1500);
        await speakIn(format, stream, audio, quiet);
        const events = await readUntil(stream, (e) => e.type === 'utterance_end');
        await stream.close();
        const [final] = finals(events);
        expect(final).toMatchObject({ text: utteranceText('book-appointment'), speechFinal: true });
        expect(final!.endSeconds).toBeGreaterThan(2.5);
        expect(target.seen(key)[0]!.bytesReceived).toBe(audio.length + quiet.length);
      });
    }

    it('refuses a wrong key as a permanent failure that does not show the key', async () => {
      const error = await failureOf(adapter.open(options('wrong-key-do-not-print-7f3a')));
      expect(error).toMatchObject({ retryable: false, status: 401 });
      expect(error.message).not.toContain('wrong-key-do-not-print-7f3a');
    });

    it('turns a 429 into a retryable failure with its retry-after, and a 5xx into a retryable one', async () => {
      const key = newKey();
      sim.failNext(key, { status: 429, retryAfter: 7 });
      const limited = await failureOf(adapter.open(options(key)));
      expect(limited).toMatchObject({ retryable: true, status: 429 });
      expect(limited.options.retryAfterSeconds).toBe(7);
      sim.failNext(key, { status: 503 });
      expect(await failureOf(adapter.open(options(key)))).toMatchObject({ retryable: true, status: 503 });
      const stream = await adapter.open(options(key));
      await stream.close();
    });

    it('waits out a slow handshake within its time limit, and times it', async () => {
      const key = newKey();
      sim.handshakeDelayMs = 300;
      try {
        const stream = await adapter.open(options(key, { connectTimeoutMs: 3000 }));
        expect(stream.timing.connectedAt! - stream.timing.startedAt).toBeGreaterThanOrEqual(295);
        await stream.close();
      } finally {
        sim.handshakeDelayMs = 0;
      }
    });

    it('gives up on a handshake slower than its time limit (retryable)', async () => {
      const key = newKey();
      sim.handshakeDelayMs = 1500;
      try {
        const error = await failureOf(adapter.open(options(key, { connectTimeoutMs: 150 })));
        expect(error.retryable).toBe(true);
      } finally {
        sim.handshakeDelayMs = 0;
      }
    });

    it('times the first transcript when it arrives from a slow vendor', async () => {
      const key = newKey();
      sim.latencyMs = 200;
      try {
        const stream = await adapter.open(options(key));
        const reading = readUntil(stream, (e) => e.type === 'transcript');
        await speak(stream, utterance('book-appointment'));
        const first = (await reading).at(-1);
        expect(first?.type).toBe('transcript');
        // Nothing can arrive before the vendor's delay (less a timer's rounding): timing is taken on arrival.
        expect(stream.timing.firstByteAt! - stream.timing.connectedAt!).toBeGreaterThanOrEqual(190);
        await stream.close();
      } finally {
        sim.latencyMs = 0;
      }
    });

    it('reports a vendor it cannot reach as retryable', async () => {
      const probe = createServer();
      await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      await new Promise<void>((resolve) => probe.close(() => resolve()));
      const error = await failureOf(adapter.open(options(newKey(), { baseUrl: `http://127.0.0.1:${port}` })));
      expect(error.retryable).toBe(true);
    });

    it('fails the events with a retryable error when the connection is cut mid-stream', async () => {
      const key = newKey();
      sim.dropAfter(100);
      const stream = await adapter.open(options(key));
      sim.dropAfter(undefined);
      const reading = readUntil(stream, () => false);
      await speak(stream, utterance('interrupt'));
      const error = await failureOf(reading);
      expect(error.retryable).toBe(true);
    });

    it('fails the events with a permanent error when the vendor closes on bad audio', async () => {
      const key = newKey();
      const stream = await adapter.open(options(key));
      const reading = readUntil(stream, () => false);
      await waitFor(() => target.seen(key).length === 1, 'the simulator has the stream');
      const { code, reason, vendorCode } = target.permanentClose;
      sim.disconnect(code, reason);
      const error = await failureOf(reading);
      expect(error).toMatchObject({ retryable: false, code: vendorCode });
    });

    it('stays open while kept alive, and fails retryable once the vendor closes it idle', async () => {
      const key = newKey();
      const idle = sim.idleTimeoutMs;
      sim.idleTimeoutMs = 400;
      try {
        const stream = await adapter.open(options(key));
        const reading = readUntil(stream, () => false);
        for (let i = 0; i < 6; i++) {
          await sleep(100);
          stream.keepAlive();
        }
        expect(target.seen(key)[0]!.closed).toBe(false);
        expect(target.seen(key)[0]!.controls.filter((c) => c === 'keepAlive').length).toBeGreaterThan(0);
        const error = await failureOf(reading);
        expect(error).toMatchObject({ retryable: true, code: target.idleVendorCode });
      } finally {
        sim.idleTimeoutMs = idle;
      }
    });

    it('ends the events quietly on abort, closing the connection at once', async () => {
      const key = newKey();
      const controller = new AbortController();
      const stream = await adapter.open(options(key, { signal: controller.signal }));
      // Abort at the first event: the caller is still speaking, the stream is still busy.
      const reading = readUntil(stream, (event) => {
        controller.abort();
        return event.type === 'utterance_end';
      });
      await speak(stream, utterance('interrupt'), silence(1500));
      const events = await reading;
      expect(events.length).toBeGreaterThan(0);
      expect(events.some((e) => e.type === 'utterance_end')).toBe(false);
      await waitFor(() => target.seen(key)[0]!.closed, 'the simulator saw the connection close');
    });

    it('ends the events when the reader stops, closing the connection', async () => {
      const key = newKey();
      const stream = await adapter.open(options(key));
      const reading = (async () => {
        for await (const event of stream.events) if (event.type === 'speech_started') break;
      })();
      await speak(stream, utterance('uh-huh'));
      await reading;
      await waitFor(() => target.seen(key)[0]!.closed, 'the simulator saw the connection close');
    });

    it('makes pending words final on finalize, and flushes then ends on close', async () => {
      const key = newKey();
      const text = utteranceText('transfer-me');
      sim.setScript(key, [text, utteranceText('goodbye')]);
      const stream = await adapter.open(options(key));
      // No trailing silence: only finalize can make the words final.
      await speak(stream, utterance('transfer-me').subarray(0, 12_000));
      const reading = readUntil(stream, (e) => e.type === 'transcript' && e.isFinal);
      stream.finalize();
      const [finalized] = finals(await reading);
      expect(finalized).toMatchObject({ text, isFinal: true, speechFinal: false });

      await speak(stream, silence(600), utterance('goodbye').subarray(0, 12_000));
      const draining = readUntil(stream, () => false);
      await stream.close();
      const rest = await draining;
      expect(finals(rest).map((e) => e.text)).toContain(utteranceText('goodbye'));
      const seen = target.seen(key)[0]!;
      expect(seen.controls).toEqual(['finalize', 'close']);
      expect(seen.closed).toBe(true);
      stream.send(silence(FRAME_MS));
    });
  });
}
