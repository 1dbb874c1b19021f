/**
 * tts_b adapter against its simulator over real loopback HTTP: the shared TTS conformance suite (the
 * vendor's documented error answers and a raw PCM answer split at odd byte offsets as golden
 * answers), then what is tts_b's own — the documented request body, the settings it takes and the
 * ones it leaves out, the conversion to each carrier format, a text over the vendor's input limit,
 * an unreachable vendor, and that a refused key never reaches the error.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../src/providers/errors.js';
import { TtsBAdapter } from '../src/providers/tts/tts-b.js';
import { TTS_B_MAX_INPUT } from '../src/providers/tts/tts-b-wire.js';
import type { TtsEvent, TtsStream, TtsStreamOptions } from '../src/providers/tts/types.js';
import { TtsBSimulator } from '../src/sim/tts-b.js';
import {
  ALAW_8K,
  type AudioFormat,
  audioLevel,
  durationMs,
  encodeAudio,
  LINEAR16_16K,
  MULAW_8K,
  pcm16ToL16,
} from '../src/voice/audio.js';
import { resample } from '../src/voice/resample.js';
import { type GoldenCase, runTtsConformance } from './support/tts-conformance.js';
import { httpTtsRig } from './support/tts-http-rig.js';

const KEY = 'sk-test-tts-b-0123456789abcdef';
const fixture = (name: string) =>
  JSON.stringify(
    JSON.parse(readFileSync(new URL(`./fixtures/vendors/tts_b/${name}.json`, import.meta.url), 'utf8')),
  );

/** 30 ms of a 440 Hz tone at the vendor's 24 kHz, as raw 16-bit PCM. */
const TONE = Int16Array.from({ length: 720 }, (_, i) =>
  Math.round(6000 * Math.sin((2 * Math.PI * 440 * i) / 24000)),
);
const TONE_BYTES = pcm16ToL16(TONE);
/** Split at odd offsets: a sample's two bytes arrive in different chunks. */
const TONE_PARTS = [TONE_BYTES.subarray(0, 301), TONE_BYTES.subarray(301, 1001), TONE_BYTES.subarray(1001)];

const golden: GoldenCase[] = [
  {
    name: 'a raw 24 kHz PCM answer split mid-sample: converted once, exactly, to the carrier format',
    frames: TONE_PARTS.map((part) => Buffer.from(part).toString('base64')),
    events: [{ audio: encodeAudio(MULAW_8K, resample(TONE, 24000, 8000)) }],
    joined: true,
    final: true,
  },
  {
    name: 'a 401 for a wrong key: permanent',
    status: 401,
    frames: [fixture('error-invalid-api-key')],
    error: { retryable: false, code: 'invalid_api_key' },
  },
  {
    name: 'a 429 rate limit: retryable',
    status: 429,
    frames: [fixture('error-rate-limit')],
    error: { retryable: true, code: 'rate_limit_exceeded' },
  },
  {
    name: 'a 429 for an exhausted quota: permanent',
    status: 429,
    frames: [fixture('error-insufficient-quota')],
    error: { retryable: false, code: 'insufficient_quota' },
  },
  {
    name: 'a 500 server error: retryable',
    status: 500,
    frames: [fixture('error-server')],
    error: { retryable: true, code: 'server_error' },
  },
];

const sim = new TtsBSimulator({ ttfbMs: 20, realtimeFactor: 10 });

runTtsConformance(
  'tts_b',
  httpTtsRig({
    adapter: new TtsBAdapter(),
    sim,
    key: KEY,
    golden,
    // A successful answer's parts are bytes (base64 in the case), an error's its JSON text.
    parts: (frames, answer) =>
      (answer.status ?? 200) < 400
        ? frames.map((frame) => new Uint8Array(Buffer.from(frame, 'base64')))
        : frames,
    // The vendor answers raw PCM whatever the carrier wants; the adapter converts it.
    formatName: () => 'pcm',
    voiceSettings: { speed: 1.1, instructions: 'Speak warmly.' },
  }),
);

describe('tts_b', () => {
  const adapter = new TtsBAdapter();
  const own = new TtsBSimulator({ ttfbMs: 0, realtimeFactor: 50 });
  let baseUrl = '';

  beforeAll(async () => {
    own.addKey(KEY);
    baseUrl = await own.start();
  });
  afterAll(() => own.stop());

  const options = (overrides: Partial<TtsStreamOptions> = {}): TtsStreamOptions => ({
    apiKey: KEY,
    baseUrl,
    voiceId: 'coral',
    format: MULAW_8K,
    voiceSettings: {},
    signal: new AbortController().signal,
    ...overrides,
  });

  async function speak(text: string, overrides: Partial<TtsStreamOptions> = {}): Promise<TtsEvent[]> {
    const stream: TtsStream = await adapter.open(options(overrides));
    stream.sendText(text);
    stream.end();
    const events: TtsEvent[] = [];
    for await (const event of stream.events) events.push(event);
    return events;
  }

  const audio = (events: TtsEvent[]) =>
    Buffer.concat(events.flatMap((event) => (event.type === 'audio' ? [event.audio] : [])));

  it('sends the documented request: model, input, voice, pcm and instructions', async () => {
    const documented = JSON.parse(fixture('speech-request'));
    await speak(documented.input, {
      modelId: documented.model,
      voiceSettings: { instructions: documented.instructions },
    });
    expect(own.requests.at(-1)!.body).toEqual(documented);
  });

  it('defaults the model, takes settings from provider_config, and leaves out what the vendor would refuse', async () => {
    await speak('Hello.', { providerConfig: { speed: 1.25, instructions: 'Calm.' } });
    expect(own.requests.at(-1)!.body).toEqual({
      model: 'gpt-4o-mini-tts',
      input: 'Hello.',
      voice: 'coral',
      response_format: 'pcm',
      speed: 1.25,
      instructions: 'Calm.',
    });
    // The stream's voice settings win over provider_config; a speed out of range, and instructions
    // for a model that takes none, are not sent at all (the vendor would refuse every sentence).
    await speak('Hello.', {
      modelId: 'tts-1',
      voiceId: 'voice_custom123',
      providerConfig: { speed: 1.25 },
      voiceSettings: { speed: 9, instructions: 'Calm.' },
    });
    expect(own.requests.at(-1)!.body).toEqual({
      model: 'tts-1',
      input: 'Hello.',
      voice: { id: 'voice_custom123' },
      response_format: 'pcm',
    });
    expect(own.requests.at(-1)!.status).toBe(200);
  });

  it.each([
    ['μ-law 8 kHz', MULAW_8K],
    ['A-law 8 kHz', ALAW_8K],
    ['16-bit PCM 16 kHz', LINEAR16_16K],
  ] as [string, AudioFormat][])(
    'converts the 24 kHz answer to %s once, keeping its duration and level',
    async (_, format) => {
      const events = await speak('One two three four.', { format });
      const bytes = audio(events);
      const sentMs = own.requests.at(-1)!.audioMs;
      expect(durationMs(format, bytes.length)).toBeCloseTo(sentMs, 0);
      expect(audioLevel(format, new Uint8Array(bytes))).toBeGreaterThan(2000);
    },
  );

  it('cuts a text longer than the vendor takes at a sentence end, into requests it accepts', async () => {
    const sentence = 'This sentence is here to make a very long answer. ';
    const text = sentence.repeat(Math.ceil((TTS_B_MAX_INPUT * 1.5) / sentence.length));
    const before = own.requests.length;
    // A short tone per character: the point is the requests, not hours of audio.
    own.options.msPerCharacter = 2;
    const events = await speak(text).finally(() => {
      own.options.msPerCharacter = 65;
    });
    expect(events.at(-1)).toEqual({ type: 'final' });
    const requests = own.requests.slice(before);
    expect(requests.length).toBe(2);
    expect(
      requests.every((request) => request.status === 200 && request.text.length <= TTS_B_MAX_INPUT),
    ).toBe(true);
    // Both in flight at once, they may arrive in either order; the cut is at a sentence's end.
    const [head, tail] = [...requests].sort((a, b) => b.text.length - a.text.length);
    expect(head!.text.endsWith('answer.')).toBe(true);
    expect(`${head!.text} ${tail!.text}`).toBe(text.trim());
  });

  it('keeps the key, and the masked key the vendor quotes, out of its errors', async () => {
    const wrong = 'sk-wrong-key-abcdefghijklmnop';
    const stream = await adapter.open(options({ apiKey: wrong }));
    stream.sendText('Hello.');
    stream.end();
    const error = await (async () => {
      for await (const _ of stream.events);
    })().catch((reason: unknown) => reason);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ status: 401, code: 'invalid_api_key', retryable: false });
    expect(String((error as Error).message)).not.toMatch(/sk-|mnop/);
  });

  it('reports an unreachable vendor as retryable, and an abort before opening as the abort', async () => {
    const closed = new TtsBSimulator();
    const url = await closed.start();
    await closed.stop();
    const stream = await adapter.open(options({ baseUrl: url }));
    stream.sendText('Hello.');
    stream.end();
    const error = await (async () => {
      for await (const _ of stream.events);
    })().catch((reason: unknown) => reason);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).retryable).toBe(true);

    const controller = new AbortController();
    controller.abort();
    await expect(adapter.open(options({ signal: controller.signal }))).rejects.toMatchObject({
      name: 'AbortError',
    });
  });
});
