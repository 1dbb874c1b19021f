/**
 * tts_d (HTTP streaming synthesis, one request per flushed piece) against its simulator over real
 * loopback HTTP: the documented request and WAV answers (golden fixtures), the carrier's format per
 * carrier (μ-law asked for, 16-bit PCM at 16 kHz asked for, A-law encoded here, another rate
 * resampled once), pieces in order while they overlap, the vendor's refusals as the events' typed
 * errors, a slow first byte, a body cut short, the older models' unknown sizes, abort, and the limits.
 *
 * The shared TTS kit (test/support/tts-conformance.ts) expects a streaming-input vendor — refusals at
 * `open`, settings seen with no text, flushes and an end of stream the vendor sees — which a
 * request-per-piece vendor cannot show; the same behaviours are checked here the way tts_d meets them.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError } from '../src/providers/errors.js';
import { TtsDAdapter, ttsDRequestBody } from '../src/providers/tts/tts-d.js';
import { WavStreamReader } from '../src/providers/tts/tts-d-wav.js';
import { ttsDWavFormat } from '../src/providers/tts/tts-d-wire.js';
import type { TtsEvent, TtsStream, TtsStreamOptions } from '../src/providers/tts/types.js';
import { TtsDSimulator } from '../src/sim/tts-d.js';
import { speakWav } from '../src/sim/tts-d-voice.js';
import {
  ALAW_8K,
  type AudioFormat,
  audioLevel,
  durationMs,
  LINEAR16_16K,
  MULAW_8K,
} from '../src/voice/audio.js';

const KEY = 'tts-d-test-key-0123456789';
const PROJECT = 'b3e8c5f1';
const SENTENCE = 'Thanks for calling, how can I help you today?';
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
async function failure(stream: TtsStream, seen: TtsEvent[] = []): Promise<ProviderError> {
  const error = await (async () => {
    for await (const event of stream.events) seen.push(event);
  })().then(
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
  const sim = new TtsDSimulator({ ttfbMs: 10, realtimeFactor: 20 });
  const adapter = new TtsDAdapter();
  let baseUrl = '';

  beforeAll(async () => {
    sim.addKey(KEY);
    sim.addProject(PROJECT);
    baseUrl = await sim.start();
  });
  afterAll(() => sim.stop());

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
  const since = (count: number) => sim.requests.slice(count);

  it('speaks a sentence: audible μ-law of plausible length, aligned, then final', async () => {
    const before = sim.requests.length;
    const stream = await adapter.open(options());
    stream.sendText(SENTENCE);
    stream.end();
    const events = await collect(stream);
    expect(events.at(-1)).toEqual({ type: 'final' });
    const audio = bytesOf(events);
    expect(durationMs(MULAW_8K, audio.length)).toBeCloseTo(SENTENCE.length * 65, -1);
    expect(audioLevel(MULAW_8K, audio)).toBeGreaterThan(1000);
    expect(spoken(events)).toBe(`${SENTENCE} `);
    const { startedAt, connectedAt, firstByteAt, endedAt } = stream.timing;
    expect(connectedAt).toBeGreaterThanOrEqual(startedAt);
    expect(firstByteAt).toBeGreaterThanOrEqual(connectedAt!);
    expect(endedAt).toBeGreaterThanOrEqual(firstByteAt!);
    expect(since(before)).toMatchObject([
      {
        key: KEY,
        status: 200,
        completed: true,
        body: {
          voice_uuid: 'voice-d',
          model: 'model-d',
          project_uuid: PROJECT,
          data: SENTENCE,
          precision: 'MULAW',
          sample_rate: 8000,
        },
      },
    ]);
  });

  it('makes one request per flushed piece and hands the audio out in order while they overlap', async () => {
    const before = sim.requests.length;
    const stream = await adapter.open(options());
    const reader = stream.events[Symbol.asyncIterator]();
    const long = 'A long first sentence that takes a good while to speak out loud.';
    stream.sendText(long);
    stream.flush();
    stream.sendText('Short.');
    stream.flush();
    // Both requests run at once: the short one is asked for before the long one has finished.
    await expect.poll(() => since(before).length).toBe(2);
    expect(since(before)[0]!.completed).toBe(false);
    const heard: TtsEvent[] = [];
    while (!spoken(heard).includes('Short.')) heard.push((await reader.next()).value as TtsEvent);
    stream.sendText('Four five');
    stream.end();
    for (let step = await reader.next(); !step.done; step = await reader.next()) heard.push(step.value);
    expect(heard.at(-1)).toEqual({ type: 'final' });
    expect(spoken(heard)).toBe(`${long} Short. Four five `);
    // The audio itself is each piece's whole answer, one after the other, never interleaved.
    const answer = (text: string) =>
      speakWav(text, ttsDWavFormat('MULAW', 8000), { msPerCharacter: 65, chunkMs: 160 }).chunks.map(
        (chunk) => chunk.audio,
      );
    expect(bytesOf(heard)).toEqual(Buffer.concat([long, 'Short.', 'Four five'].flatMap(answer)));
    expect(since(before).map((request) => request.body.data)).toEqual([long, 'Short.', 'Four five']);
  });

  it('asks for 16-bit PCM at 16 kHz for such a carrier, and encodes A-law itself', async () => {
    for (const format of [LINEAR16_16K, ALAW_8K]) {
      const before = sim.requests.length;
      const stream = await adapter.open(options({ format }));
      stream.sendText('Hello there.');
      stream.end();
      const audio = bytesOf(await collect(stream));
      expect(since(before)[0]!.body).toMatchObject({ precision: 'PCM_16', sample_rate: format.sampleRate });
      expect(durationMs(format, audio.length)).toBeCloseTo('Hello there.'.length * 65, -1);
      expect(audioLevel(format, audio)).toBeGreaterThan(1000);
    }
  });

  it('speaks the documented answers: byte for byte when already the carrier format, resampled once when not', async () => {
    sim.replyNext(
      [hex('stream-mulaw-8k.hex')].flatMap((b) => [b.subarray(0, 5), b.subarray(5, 77), b.subarray(77)]),
    );
    const mulaw = await adapter.open(options());
    mulaw.sendText('Ok');
    mulaw.end();
    const events = await collect(mulaw);
    expect(audioOf(events)).toEqual([
      {
        type: 'audio',
        audio: new Uint8Array([0xff, 0x9f, 0x8f, 0x9f, 0xff, 0x1f, 0x0f, 0x1f]),
        alignment: { chars: ['O', 'k', ' '], startMs: [0, 0.5, 1], durationMs: [0.5, 0.5, 0] },
      },
    ]);
    expect(events.at(-1)).toEqual({ type: 'final' });

    // 16 kHz PCM for a μ-law 8 kHz carrier: half the samples, one byte each.
    sim.replyNext([hex('stream-pcm16-16k-unknown-size.hex')]);
    const pcm = await adapter.open(options());
    pcm.sendText('Hi');
    pcm.end();
    const converted = await collect(pcm);
    expect(spoken(converted)).toBe('Hi ');
    expect(bytesOf(converted).length).toBe(4);
    expect(converted.at(-1)).toEqual({ type: 'final' });
  });

  it("fails the events with the vendor's refusals: 401 and 404 permanent, 429 with retry-after and 500 retryable", async () => {
    const refused = async (overrides: Partial<TtsStreamOptions>) => {
      const stream = await adapter.open(options(overrides));
      stream.sendText('Hello.');
      stream.end();
      return failure(stream);
    };
    const badKey = await refused({ apiKey: 'not-a-key-of-the-vendor' });
    expect(badKey).toMatchObject({ retryable: false, status: 401 });
    expect(badKey.message).not.toContain('not-a-key-of-the-vendor');
    expect(await refused({ providerConfig: { project_uuid: 'unknown-project' } })).toMatchObject({
      retryable: false,
      status: 404,
    });
    sim.failNext('*', { status: 429, retryAfterSeconds: 3 });
    const limited = await refused({});
    expect(limited).toMatchObject({ retryable: true, status: 429 });
    expect(limited.options.retryAfterSeconds).toBe(3);
    sim.failNext(KEY, { status: 500 });
    expect(await refused({})).toMatchObject({ retryable: true, status: 500 });
  });

  it('refuses at open a stream without provider_config.project_uuid', async () => {
    await expect(adapter.open(options({ providerConfig: {} }))).rejects.toMatchObject({
      retryable: false,
      code: 'missing_project_uuid',
    });
  });

  it('waits out a slow first byte, and its timing shows it', async () => {
    sim.options.ttfbMs = 300;
    try {
      const stream = await adapter.open(options());
      stream.sendText('Slow.');
      stream.end();
      expect((await collect(stream)).at(-1)).toEqual({ type: 'final' });
      expect(stream.timing.firstByteAt! - stream.timing.connectedAt!).toBeGreaterThanOrEqual(295);
    } finally {
      sim.options.ttfbMs = 10;
    }
  });

  it('fails retryably when the body is cut short, after the audio that came', async () => {
    sim.cutAfterAudio(300);
    const stream = await adapter.open(options());
    stream.sendText(SENTENCE);
    stream.end();
    const seen: TtsEvent[] = [];
    const error = await failure(stream, seen);
    expect(error).toMatchObject({ retryable: true });
    expect(audioOf(seen).length).toBeGreaterThan(0);
    expect(seen.some((event) => event.type === 'final')).toBe(false);
  });

  it("takes the older models' unknown sizes: audio until the body ends", async () => {
    sim.options.unknownSizes = true;
    try {
      const stream = await adapter.open(options());
      stream.sendText('Older model.');
      stream.end();
      const events = await collect(stream);
      expect(events.at(-1)).toEqual({ type: 'final' });
      expect(durationMs(MULAW_8K, bytesOf(events).length)).toBeCloseTo('Older model.'.length * 65, -1);
    } finally {
      sim.options.unknownSizes = false;
    }
  });

  it('splits a piece longer than the vendor takes at sentence ends', async () => {
    const before = sim.requests.length;
    const sentence = 'This sentence is about sixty characters long, give or take. ';
    const stream = await adapter.open(options());
    stream.sendText(sentence.repeat(40));
    stream.end();
    // Both pieces are asked for at once; the first audio is enough, the rest is not waited for.
    const reader = stream.events[Symbol.asyncIterator]();
    expect((await reader.next()).value).toMatchObject({ type: 'audio' });
    await reader.return?.();
    await expect.poll(() => since(before).length).toBe(2);
    const datas = since(before).map((request) => String(request.body.data));
    expect(datas.length).toBe(2);
    expect(datas.every((data) => data.length <= 2000 && data.endsWith('take.'))).toBe(true);
    expect(datas.join(' ')).toBe(sentence.repeat(40).trim());
  });

  it('on abort cancels its requests at once and ends quietly, with no more audio', async () => {
    const before = sim.requests.length;
    const controller = new AbortController();
    const stream = await adapter.open(options({ signal: controller.signal }));
    const reader = stream.events[Symbol.asyncIterator]();
    stream.sendText(`${SENTENCE} ${SENTENCE}`);
    stream.flush();
    stream.sendText(SENTENCE);
    stream.end();
    expect((await reader.next()).value).toMatchObject({ type: 'audio' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    controller.abort();
    expect(await reader.next()).toEqual({ value: undefined, done: true });
    await expect.poll(() => since(before).every((request) => request.closed)).toBe(true);
    expect(since(before).some((request) => request.completed)).toBe(false);
    stream.sendText('Too late.');
    stream.flush();
    expect(since(before)).toHaveLength(2);
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
