/**
 * stt_a (live streaming transcription) against its simulator over loopback WebSockets: the STT
 * conformance suite, then what is stt_a's own — the handshake URL, a refusal's `dg-error`, and the
 * simulator's closing `Metadata` and per-connection scripts.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../src/providers/errors.js';
import { parseSttAMessage, SttAAdapter, sttAListenUrl } from '../src/providers/stt/stt-a.js';
import type { SttStreamOptions } from '../src/providers/stt/types.js';
import { SttASimulator } from '../src/sim/stt-a.js';
import { MULAW_8K, pcm16ToUlaw } from '../src/voice/audio.js';
import {
  describeSttConformance,
  readUntil,
  type SeenStream,
  silence,
  speak,
  utterance,
  utteranceText,
} from './support/stt-conformance.js';

const GOLDEN = 'test/fixtures/vendors/stt-a';
const CONTROLS: Record<string, SeenStream['controls'][number]> = {
  KeepAlive: 'keepAlive',
  Finalize: 'finalize',
  CloseStream: 'close',
};

const conformanceSim = new SttASimulator();
describeSttConformance('stt_a', {
  adapter: new SttAAdapter(),
  simulator: conformanceSim,
  parse: parseSttAMessage,
  golden: [
    {
      file: `${GOLDEN}/results-interim.json`,
      expected: {
        type: 'transcript',
        text: 'I need to',
        isFinal: false,
        speechFinal: false,
        startSeconds: 3.48,
        endSeconds: 3.48 + 0.74,
        confidence: 0.87,
      },
    },
    {
      file: `${GOLDEN}/results-speech-final.json`,
      expected: {
        type: 'transcript',
        text: 'I need to reschedule.',
        isFinal: true,
        speechFinal: true,
        startSeconds: 3.48,
        endSeconds: 3.48 + 1.02,
        confidence: 0.98,
      },
    },
    { file: `${GOLDEN}/utterance-end.json`, expected: { type: 'utterance_end', lastWordEndSeconds: 4.5 } },
    { file: `${GOLDEN}/speech-started.json`, expected: { type: 'speech_started', atSeconds: 9.54 } },
    { file: `${GOLDEN}/metadata.json`, expected: undefined },
  ],
  models: { keyterms: 'nova-3', keywords: 'nova-2' },
  seen: (key) =>
    conformanceSim.connectionsOf(key).map((c) => ({
      keyterms: c.query.getAll('keyterm'),
      keywords: c.query.getAll('keywords').map((k) => {
        const [keyword, intensifier] = k.split(':');
        return intensifier === undefined
          ? { keyword: keyword! }
          : { keyword: keyword!, intensifier: Number(intensifier) };
      }),
      utteranceEndMs: c.query.has('utterance_end_ms') ? Number(c.query.get('utterance_end_ms')) : undefined,
      controls: c.controls.map((type) => CONTROLS[type] ?? 'other'),
      bytesReceived: c.bytesReceived,
      closed: c.closed !== undefined,
    })),
  permanentClose: {
    code: 1008,
    reason: 'DATA-0000: the payload cannot be decoded as audio',
    vendorCode: 'DATA-0000',
  },
  idleVendorCode: 'NET-0001',
});

const base: Omit<SttStreamOptions, 'apiKey' | 'signal'> = {
  baseUrl: 'https://api.deepgram.com/',
  model: 'nova-3',
  language: 'en-US',
  format: MULAW_8K,
  endpointingMs: 300,
  utteranceEndMs: 1000,
  punctuate: true,
  smartFormat: false,
  keywords: [],
  keyterms: [],
};

describe('stt_a handshake URL', () => {
  it('speaks wss to an https base and names every setting', () => {
    const url = new URL(sttAListenUrl(base));
    expect(`${url.protocol}//${url.host}${url.pathname}`).toBe('wss://api.deepgram.com/v1/listen');
    expect(Object.fromEntries(url.searchParams)).toEqual({
      model: 'nova-3',
      language: 'en-US',
      encoding: 'mulaw',
      sample_rate: '8000',
      channels: '1',
      interim_results: 'true',
      endpointing: '300',
      utterance_end_ms: '1000',
      vad_events: 'true',
      punctuate: 'true',
      smart_format: 'false',
    });
  });

  it('turns endpointing off with false and sends no vocabulary to a model that takes neither', () => {
    const url = new URL(
      sttAListenUrl({
        ...base,
        endpointingMs: 0,
        model: 'whisper-large',
        keyterms: ['a'],
        keywords: [{ keyword: 'b' }],
      }),
    );
    expect(url.searchParams.get('endpointing')).toBe('false');
    expect(url.searchParams.has('keyterm') || url.searchParams.has('keywords')).toBe(false);
  });
});

describe('stt_a adapter and simulator', () => {
  const sim = new SttASimulator();
  const adapter = new SttAAdapter();
  const key = 'own-key-0123456789abcdef';
  const open = (extra: Partial<SttStreamOptions> = {}) =>
    adapter.open({
      ...base,
      baseUrl: sim.baseUrl,
      apiKey: key,
      signal: new AbortController().signal,
      ...extra,
    });

  beforeAll(async () => {
    await sim.start();
    sim.addKey(key);
  });
  afterAll(() => sim.stop());

  it("carries the vendor's dg-error of a refused handshake in a permanent failure", async () => {
    const error = await open({ format: { encoding: 'alaw', sampleRate: 8000 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ retryable: false, status: 400 });
    expect((error as Error).message).toContain('alaw');
  });

  it('ends a closed stream with Metadata about the audio it received', async () => {
    sim.setScript(key, [utteranceText('uh-huh')]);
    const stream = await open();
    await speak(stream, utterance('uh-huh'));
    const reading = readUntil(stream, () => false);
    await stream.close();
    const events = await reading;
    expect(
      events
        .filter((e) => e.type === 'transcript' && e.isFinal)
        .map((e) => e.type === 'transcript' && e.text),
    ).toEqual([utteranceText('uh-huh')]);
    const connection = sim.connections.at(-1)!;
    const metadata = connection.sent.at(-1)!;
    const audio = utterance('uh-huh');
    expect(metadata).toMatchObject({
      type: 'Metadata',
      channels: 1,
      sha256: createHash('sha256').update(audio).digest('hex'),
    });
    expect(metadata.duration).toBeCloseTo(audio.length / MULAW_8K.sampleRate, 3);
    expect(connection.closed).toMatchObject({ code: 1000, by: 'simulator' });
  });

  it('takes a single loud frame (a click) for noise, not speech', async () => {
    const click = pcm16ToUlaw(Int16Array.from({ length: 160 }, (_, i) => Math.round(8000 * Math.sin(i / 3))));
    const stream = await open();
    await speak(stream, silence(200), click, silence(600));
    const reading = readUntil(stream, () => false);
    await stream.close();
    expect(await reading).toEqual([]);
    expect(sim.connections.at(-1)!.sent.map((m) => m.type)).toEqual(['Metadata']);
  });

  it('gives every connection its own copy of the script, then the default utterance', async () => {
    sim.setScript('*', [utteranceText('goodbye')]);
    const other = 'other-key-0123456789abcdef';
    sim.addKey(other);
    for (let i = 0; i < 2; i++) {
      const stream = await adapter.open({
        ...base,
        baseUrl: sim.baseUrl,
        apiKey: other,
        signal: new AbortController().signal,
      });
      await speak(stream, utterance('goodbye'), silence(500), utterance('uh-huh'), silence(500));
      const reading = readUntil(stream, () => false);
      await stream.close();
      const texts = (await reading).flatMap((e) =>
        e.type === 'transcript' && e.speechFinal ? [e.text] : [],
      );
      expect(texts).toEqual([utteranceText('goodbye'), 'unscripted speech']);
    }
  });
});
