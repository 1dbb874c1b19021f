/**
 * tts_d adapter against its simulator over real loopback HTTP: the shared TTS conformance suite as a
 * request-per-piece vendor (its documented WAV answers — μ-law passed on byte for byte with its
 * grapheme cues as the alignment, 16 kHz PCM converted once — and a body shorter than its header
 * says, or no WAV at all, as golden answers), then what is tts_d's own: the documented request body,
 * the WAV header read however the bytes are split, each piece's alignment from its cues, the carrier
 * formats it asks for (A-law encoded here), an unknown project, a missing project, the older models'
 * unknown sizes, a text over the vendor's limit, and an unreachable vendor.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../src/providers/errors.js';
import { TtsDAdapter, ttsDRequestBody } from '../src/providers/tts/tts-d.js';
import { WavStreamReader } from '../src/providers/tts/tts-d-wav.js';
import { TTS_D_MAX_CHARACTERS } from '../src/providers/tts/tts-d-wire.js';
import type { TtsEvent, TtsStream, TtsStreamOptions } from '../src/providers/tts/types.js';
import { ToneVoice } from '../src/sim/tts-a-voice.js';
import { TtsDSimulator } from '../src/sim/tts-d.js';
import {
  ALAW_8K,
  type AudioFormat,
  audioLevel,
  durationMs,
  encodeAudio,
  LINEAR16_16K,
  l16ToPcm16,
  MULAW_8K,
} from '../src/voice/audio.js';
import { resample } from '../src/voice/resample.js';
import { type GoldenCase, runTtsConformance } from './support/tts-conformance.js';
import { httpTtsRig } from './support/tts-http-rig.js';

const KEY = 'tts-d-test-key-0123456789';
const PROJECT = 'b3e8c5f1';
const fixture = (name: string) => new URL(`./fixtures/vendors/tts_d/${name}`, import.meta.url);
/** An annotated hex fixture as bytes (`#` lines are comments). */
const hex = (name: string) =>
  new Uint8Array(
    Buffer.from(
      readFileSync(fixture(name), 'utf8')
        .split('\n')
        .filter((line) => !line.startsWith('#'))
        .join('')
        .replace(/\s+/g, ''),
      'hex',
    ),
  );
const toHex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

const MULAW_WAV = hex('stream-mulaw-8k.hex');
const PCM_WAV = hex('stream-pcm16-16k-unknown-size.hex');
/** The header split mid-chunk, its 8 bytes of audio in one part (so they come as one event). */
const MULAW_PARTS = [MULAW_WAV.subarray(0, 5), MULAW_WAV.subarray(5, -8), MULAW_WAV.subarray(-8)];

const golden: GoldenCase[] = [
  {
    name: 'a μ-law 8 kHz WAV with grapheme cues: its audio byte for byte, the cues as its alignment',
    frames: MULAW_PARTS.map(toHex),
    events: [
      {
        audio: MULAW_WAV.subarray(-8),
        alignment: { chars: ['O', 'k', ' '], startMs: [0, 0.5, 1], durationMs: [0.5, 0.5, 0] },
      },
    ],
    final: true,
  },
  {
    name: 'a 16 kHz PCM WAV of unknown sizes for a μ-law 8 kHz carrier: converted once, exactly',
    frames: [toHex(PCM_WAV)],
    events: [{ audio: encodeAudio(MULAW_8K, resample(l16ToPcm16(PCM_WAV.subarray(-16)), 16000, 8000)) }],
    joined: true,
    final: true,
  },
  {
    name: 'a body that ends before the audio its header declares: retryable',
    frames: [toHex(MULAW_WAV.subarray(0, -4))],
    error: { retryable: true, code: 'stream_incomplete' },
  },
  {
    name: 'an answer that is not the documented WAV: permanent',
    frames: [toHex(new TextEncoder().encode('{"success":true,"audio":"…"}'))],
    error: { retryable: false, code: 'protocol' },
  },
];

const sim = new TtsDSimulator({ ttfbMs: 20, realtimeFactor: 10 });
sim.addProject(PROJECT);

runTtsConformance(
  'tts_d',
  httpTtsRig({
    adapter: new TtsDAdapter(),
    sim,
    key: KEY,
    golden,
    parts: (frames) => frames.map((frame) => new Uint8Array(Buffer.from(frame, 'hex'))),
    formatName: (format) =>
      format.encoding === 'mulaw' && format.sampleRate === 8000
        ? 'MULAW/8000'
        : `PCM_16/${format.sampleRate}`,
    // The vendor takes no voice settings (tts_a's are not sent); its two switches are provider_config's.
    voiceSettings: {},
    providerConfig: { project_uuid: PROJECT },
  }),
);

async function collect(stream: TtsStream): Promise<TtsEvent[]> {
  const events: TtsEvent[] = [];
  for await (const event of stream.events) events.push(event);
  return events;
}
const audioOf = (events: TtsEvent[]) => events.flatMap((event) => (event.type === 'audio' ? [event] : []));
const bytesOf = (events: TtsEvent[]) => Buffer.concat(audioOf(events).map((event) => event.audio));
const spoken = (events: TtsEvent[]) =>
  audioOf(events)
    .map((event) => event.alignment?.chars.join('') ?? '')
    .join('');
async function failure(stream: TtsStream): Promise<ProviderError> {
  const error = await collect(stream).then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

describe('tts_d wire', () => {
  it('asks for the documented body, with the carrier format where the vendor has it', () => {
    const options = (format: AudioFormat): TtsStreamOptions => ({
      apiKey: KEY,
      baseUrl: 'https://f.cluster.resemble.ai',
      voiceId: '55592656',
      modelId: 'chatterbox-turbo',
      format,
      voiceSettings: { stability: 0.5 },
      providerConfig: { project_uuid: PROJECT },
      signal: new AbortController().signal,
    });
    const data = 'Streaming helps deliver synthesized audio before it is finished.';
    expect(ttsDRequestBody(options(MULAW_8K), data)).toEqual(
      JSON.parse(readFileSync(fixture('request-mulaw.json'), 'utf8')),
    );
    expect(ttsDRequestBody(options(LINEAR16_16K), data)).toMatchObject({
      precision: 'PCM_16',
      sample_rate: 16000,
    });
    // The vendor has no A-law: 16-bit PCM at the carrier's rate, encoded by the adapter.
    expect(ttsDRequestBody(options(ALAW_8K), data)).toMatchObject({ precision: 'PCM_16', sample_rate: 8000 });
    const flags = ttsDRequestBody(
      { ...options(MULAW_8K), providerConfig: { project_uuid: PROJECT, use_hd: true, other: 1 } },
      data,
    );
    expect(flags).toMatchObject({ use_hd: true });
    expect(flags).not.toHaveProperty('other');
    expect(flags).not.toHaveProperty('stability');
  });

  it('reads the documented WAV headers however the bytes are split', () => {
    for (const split of [1, 3, 7, 1000]) {
      const bytes = hex('stream-pcm16-16k-unknown-size.hex');
      const reader = new WavStreamReader();
      const audio: Uint8Array[] = [];
      for (let at = 0; at < bytes.length; at += split)
        audio.push(reader.push(bytes.subarray(at, at + split)));
      expect(reader.header).toEqual({
        format: { formatTag: 1, channels: 1, sampleRate: 16000, bitsPerSample: 16 },
        graphemes: [
          { text: 'H', startSample: 0, lengthSamples: 4 },
          { text: 'i', startSample: 4, lengthSamples: 4 },
        ],
      });
      expect(Buffer.concat(audio)).toEqual(Buffer.from(bytes.subarray(bytes.length - 16)));
    }
    const mulaw = new WavStreamReader();
    const bytes = hex('stream-mulaw-8k.hex');
    expect(Buffer.from(mulaw.push(bytes))).toEqual(Buffer.from(bytes.subarray(bytes.length - 8)));
    expect(mulaw.header).toMatchObject({
      format: { formatTag: 7, sampleRate: 8000, bitsPerSample: 8 },
      dataBytes: 8,
      graphemes: [{ text: 'O' }, { text: 'k' }],
    });
  });

  it('refuses a body that is not a WAV, or a stereo one, as a permanent protocol error', () => {
    expect(() => new WavStreamReader().push(Buffer.from('{"success":true}  '))).toThrow(
      expect.objectContaining({ code: 'protocol', retryable: false }),
    );
    const stereo = hex('stream-mulaw-8k.hex');
    stereo[22] = 2;
    expect(() => new WavStreamReader().push(stereo)).toThrow(/2 channels/);
  });
});

describe('tts_d adapter against its simulator', () => {
  const own = new TtsDSimulator({ ttfbMs: 10, realtimeFactor: 20 });
  const adapter = new TtsDAdapter();
  let baseUrl = '';

  beforeAll(async () => {
    own.addKey(KEY);
    own.addProject(PROJECT);
    baseUrl = await own.start();
  });
  afterAll(() => own.stop());

  const options = (overrides: Partial<TtsStreamOptions> = {}): TtsStreamOptions => ({
    apiKey: KEY,
    baseUrl,
    voiceId: 'voice-d',
    modelId: 'model-d',
    format: MULAW_8K,
    voiceSettings: {},
    providerConfig: { project_uuid: PROJECT },
    signal: new AbortController().signal,
    ...overrides,
  });
  const since = (count: number) => own.requests.slice(count);
  async function speak(text: string, overrides: Partial<TtsStreamOptions> = {}): Promise<TtsEvent[]> {
    const stream = await adapter.open(options(overrides));
    stream.sendText(text);
    stream.end();
    return collect(stream);
  }

  it("gives each piece its cues' alignment, and each piece's whole answer in turn", async () => {
    const before = own.requests.length;
    const stream = await adapter.open(options());
    const long = 'A long first sentence that takes a good while to speak out loud.';
    stream.sendText(long);
    stream.flush();
    stream.sendText('Short.');
    stream.flush();
    stream.sendText('Four five');
    stream.end();
    const heard = await collect(stream);
    expect(heard.at(-1)).toEqual({ type: 'final' });
    // Each piece's alignment ends with a space: the caller heard whole words up to its end.
    expect(spoken(heard)).toBe(`${long} Short. Four five `);
    // The audio is each piece's whole answer, one after the other, never interleaved.
    const answer = (text: string) => [...new ToneVoice(MULAW_8K, 65, 160).speak(text)].map((c) => c.audio);
    expect(bytesOf(heard)).toEqual(Buffer.concat([long, 'Short.', 'Four five'].flatMap(answer)));
    expect(since(before).map((request) => request.body)).toEqual(
      [long, 'Short.', 'Four five'].map((data) => ttsDRequestBody(options(), data)),
    );
  });

  it('asks for 16-bit PCM at 16 kHz for such a carrier, and encodes A-law itself', async () => {
    for (const format of [LINEAR16_16K, ALAW_8K]) {
      const before = own.requests.length;
      const audio = bytesOf(await speak('Hello there.', { format }));
      expect(since(before)[0]!.body).toMatchObject({ precision: 'PCM_16', sample_rate: format.sampleRate });
      expect(durationMs(format, audio.length)).toBeCloseTo('Hello there.'.length * 65, -1);
      expect(audioLevel(format, audio)).toBeGreaterThan(1000);
    }
  });

  it("fails with the vendor's 404 for a project it does not know: permanent, its message kept", async () => {
    const stream = await adapter.open(options({ providerConfig: { project_uuid: 'unknown-project' } }));
    stream.sendText('Hello.');
    stream.end();
    const error = await failure(stream);
    expect(error).toMatchObject({ retryable: false, status: 404 });
    expect(error.message).toContain('Project not found');
  });

  it('refuses at open a stream without provider_config.project_uuid', async () => {
    await expect(adapter.open(options({ providerConfig: {} }))).rejects.toMatchObject({
      retryable: false,
      code: 'missing_project_uuid',
    });
  });

  it("takes the older models' unknown sizes: audio until the body ends", async () => {
    own.unknownSizes = true;
    try {
      const events = await speak('Older model.');
      expect(events.at(-1)).toEqual({ type: 'final' });
      expect(durationMs(MULAW_8K, bytesOf(events).length)).toBeCloseTo('Older model.'.length * 65, -1);
    } finally {
      own.unknownSizes = false;
    }
  });

  it('splits a piece longer than the vendor takes at sentence ends', async () => {
    const before = own.requests.length;
    const sentence = 'This sentence is about sixty characters long, give or take. ';
    const stream = await adapter.open(options());
    stream.sendText(sentence.repeat(40));
    stream.end();
    // Both pieces are asked for at once; the first audio is enough, the rest is not waited for.
    const reader = stream.events[Symbol.asyncIterator]();
    expect((await reader.next()).value).toMatchObject({ type: 'audio' });
    await reader.return?.();
    await expect.poll(() => since(before).length).toBe(2);
    const texts = since(before).map((request) => request.text);
    expect(texts.every((text) => text.length <= TTS_D_MAX_CHARACTERS && text.endsWith('take.'))).toBe(true);
    expect(texts.join(' ')).toBe(sentence.repeat(40).trim());
  });

  it('reports a vendor it cannot reach as retryable', async () => {
    const gone = new TtsDSimulator();
    const url = await gone.start();
    await gone.stop();
    const stream = await adapter.open(options({ baseUrl: url }));
    stream.sendText('Anyone there?');
    stream.end();
    expect(await failure(stream)).toMatchObject({ retryable: true });
  });
});
