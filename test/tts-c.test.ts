/**
 * tts_c adapter against its simulator over real loopback HTTP: the shared TTS conformance suite (the
 * vendor's documented answer and errors as golden answers), then what is tts_c's own — the
 * documented request, the language and voice rules, the settings it takes and the ones it leaves out,
 * each carrier format asked for as is (no conversion), a WAV with an extra chunk, an answer that is
 * not the documented one, a rate limit's RetryInfo, and an unreachable vendor.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../src/providers/errors.js';
import { TtsCAdapter } from '../src/providers/tts/tts-c.js';
import type { TtsEvent, TtsStreamOptions } from '../src/providers/tts/types.js';
import { TtsCSimulator } from '../src/sim/tts-c.js';
import {
  ALAW_8K,
  type AudioFormat,
  audioLevel,
  durationMs,
  LINEAR16_16K,
  MULAW_8K,
} from '../src/voice/audio.js';
import { type GoldenCase, runTtsConformance } from './support/tts-conformance.js';
import { httpTtsRig } from './support/tts-http-rig.js';

const KEY = 'AIza-test-tts-c-0123456789abcdef';
const read = (name: string) =>
  readFileSync(new URL(`./fixtures/vendors/tts_c/${name}`, import.meta.url), 'utf8');
const fixture = (name: string) => JSON.stringify(JSON.parse(read(`${name}.json`)));
const hex = (name: string) => new Uint8Array(Buffer.from(read(`${name}.hex`).trim(), 'hex'));

const golden: GoldenCase[] = [
  {
    name: 'a μ-law answer: its WAV header stripped, the samples passed on as they are',
    frames: [fixture('synthesize-response-mulaw')],
    events: [{ audio: hex('audio-mulaw') }],
    final: true,
  },
  {
    name: 'an unknown key (400 API_KEY_INVALID): permanent',
    status: 400,
    frames: [fixture('error-api-key-invalid')],
    error: { retryable: false, code: 'API_KEY_INVALID' },
  },
  {
    name: 'a rate limit (429 RESOURCE_EXHAUSTED): retryable',
    status: 429,
    frames: [fixture('error-rate-limit')],
    error: { retryable: true, code: 'RATE_LIMIT_EXCEEDED' },
  },
  {
    name: 'a voice that does not exist (400 INVALID_ARGUMENT): permanent',
    status: 400,
    frames: [fixture('error-invalid-voice')],
    error: { retryable: false, code: 'INVALID_ARGUMENT' },
  },
  {
    name: 'the service unavailable (503): retryable',
    status: 503,
    frames: [fixture('error-unavailable')],
    error: { retryable: true, code: 'UNAVAILABLE' },
  },
];

const sim = new TtsCSimulator({ ttfbMs: 20, realtimeFactor: 10 });

runTtsConformance(
  'tts_c',
  httpTtsRig({
    adapter: new TtsCAdapter(),
    sim,
    key: KEY,
    golden,
    formatName: (format) =>
      `${format.encoding === 'mulaw' ? 'MULAW' : format.encoding === 'alaw' ? 'ALAW' : 'LINEAR16'}/${format.sampleRate}`,
    // The vendor answers an unknown key with 400 INVALID_ARGUMENT (reason API_KEY_INVALID), not 401.
    unknownKeyStatus: 400,
    voiceSettings: { speaking_rate: 1.1, pitch: -2, volume_gain_db: 3 },
  }),
);

describe('tts_c', () => {
  const adapter = new TtsCAdapter();
  const own = new TtsCSimulator({ ttfbMs: 0, realtimeFactor: 50 });
  let baseUrl = '';

  beforeAll(async () => {
    own.addKey(KEY);
    baseUrl = await own.start();
  });
  afterAll(() => own.stop());

  const options = (overrides: Partial<TtsStreamOptions> = {}): TtsStreamOptions => ({
    apiKey: KEY,
    baseUrl,
    voiceId: 'en-GB-Standard-A',
    format: MULAW_8K,
    voiceSettings: {},
    signal: new AbortController().signal,
    ...overrides,
  });

  async function speak(text: string, overrides: Partial<TtsStreamOptions> = {}): Promise<TtsEvent[]> {
    const stream = await adapter.open(options(overrides));
    stream.sendText(text);
    stream.end();
    const events: TtsEvent[] = [];
    for await (const event of stream.events) events.push(event);
    return events;
  }

  const audio = (events: TtsEvent[]) =>
    Buffer.concat(events.flatMap((event) => (event.type === 'audio' ? [event.audio] : [])));

  it('sends the documented request', async () => {
    const documented = JSON.parse(fixture('synthesize-request'));
    await speak(documented.input.text, { language: 'en-GB' });
    expect(own.requests.at(-1)!.body).toEqual(documented);
  });

  it('takes the language from provider_config, else the voice name, else en-US; the default voice is the vendor’s', async () => {
    await speak('Hallo.', { voiceId: 'de-DE-Neural2-B', providerConfig: { language: 'de-AT' } });
    expect(own.requests.at(-1)!.body.voice).toEqual({ languageCode: 'de-AT', name: 'de-DE-Neural2-B' });
    await speak('Bonjour.', { voiceId: 'fr-CA-Chirp3-HD-Charon', modelId: 'chirp-3-hd' });
    expect(own.requests.at(-1)!.body.voice).toEqual({
      languageCode: 'fr-CA',
      name: 'fr-CA-Chirp3-HD-Charon',
      modelName: 'chirp-3-hd',
    });
    await speak('Hello.', { voiceId: 'default' });
    expect(own.requests.at(-1)!.body.voice).toEqual({ languageCode: 'en-US' });
  });

  it('sends the audio settings in range, and leaves out the ones the vendor would refuse', async () => {
    await speak('Hello.', {
      providerConfig: { speaking_rate: 1.5, pitch: 30, volume_gain_db: -6 },
      voiceSettings: { speaking_rate: 0.9 },
    });
    const request = own.requests.at(-1)!;
    expect(request.status).toBe(200);
    expect(request.body.audioConfig).toEqual({
      audioEncoding: 'MULAW',
      sampleRateHertz: 8000,
      speakingRate: 0.9,
      volumeGainDb: -6,
    });
  });

  it.each([
    ['μ-law 8 kHz', MULAW_8K, 'MULAW/8000'],
    ['A-law 8 kHz', ALAW_8K, 'ALAW/8000'],
    ['16-bit PCM 16 kHz', LINEAR16_16K, 'LINEAR16/16000'],
  ] as [string, AudioFormat, string][])(
    'asks for %s itself and passes it on unconverted',
    async (_, format, name) => {
      const bytes = audio(await speak('One two three four.', { format }));
      const request = own.requests.at(-1)!;
      expect(request.outputFormat).toBe(name);
      expect(durationMs(format, bytes.length)).toBe(request.audioMs);
      expect(audioLevel(format, new Uint8Array(bytes))).toBeGreaterThan(2000);
    },
  );

  it('finds the samples of a WAV with another chunk before its data', async () => {
    own.replyNext({ parts: [fixture('synthesize-response-linear16-list')] });
    expect(audio(await speak('Hello.', { format: LINEAR16_16K }))).toEqual(
      Buffer.from(hex('audio-linear16')),
    );
  });

  it('refuses, permanently, an answer that is not the documented one', async () => {
    for (const body of [
      '{"audio":"x"}',
      JSON.stringify({ audioContent: Buffer.from('not a wav').toString('base64') }),
    ]) {
      own.replyNext({ parts: [body] });
      await expect(speak('Hello.')).rejects.toMatchObject({ retryable: false, code: 'protocol' });
    }
    // A WAV in another format than the one asked for is refused rather than played as noise.
    own.replyNext({ parts: [fixture('synthesize-response-linear16-list')] });
    await expect(speak('Hello.', { format: MULAW_8K })).rejects.toMatchObject({ code: 'protocol' });
  });

  it('reads the wait a rate limit asks for from its RetryInfo', async () => {
    own.failNext({ status: 429, retryAfterSeconds: 7 });
    const error = await speak('Hello.').catch((reason: unknown) => reason);
    expect(error).toMatchObject({ status: 429, retryable: true, code: 'RATE_LIMIT_EXCEEDED' });
    expect((error as ProviderError).options.retryAfterSeconds).toBe(7);
  });

  it('reports an unreachable vendor as retryable, and an abort before opening as the abort', async () => {
    const closed = new TtsCSimulator();
    const url = await closed.start();
    await closed.stop();
    const error = await speak('Hello.', { baseUrl: url }).catch((reason: unknown) => reason);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).retryable).toBe(true);
    expect((error as ProviderError).message).not.toContain(KEY);

    const controller = new AbortController();
    controller.abort();
    await expect(adapter.open(options({ signal: controller.signal }))).rejects.toMatchObject({
      name: 'AbortError',
    });
  });
});
