/**
 * tts_a adapter against its simulator over real loopback WebSockets: the shared TTS conformance suite
 * (with the vendor's documented messages as golden frames), then what is tts_a's own — the stream's
 * URL and first message, error frames (quota permanent, inactivity retryable), a policy close, an
 * unreachable vendor, and the simulator's generation rules (phrases in auto mode, the audio's pace).
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ProviderError } from '../src/providers/errors.js';
import { TtsAAdapter, ttsAStreamUrl } from '../src/providers/tts/tts-a.js';
import { ttsAOutputFormat } from '../src/providers/tts/tts-a-wire.js';
import type { TtsEvent, TtsStreamOptions } from '../src/providers/tts/types.js';
import { TtsASimulator } from '../src/sim/tts-a.js';
import { ALAW_8K, MULAW_8K, pcm16ToAlaw, ulawToPcm16 } from '../src/voice/audio.js';
import { type GoldenCase, runTtsConformance } from './support/tts-conformance.js';

const KEY = 'xi-test-key-0123456789';
const fixture = (name: string) =>
  JSON.stringify(
    JSON.parse(readFileSync(new URL(`./fixtures/vendors/tts-a/${name}.json`, import.meta.url), 'utf8')),
  );
const DOC_AUDIO = new Uint8Array(Buffer.from('Y3VyaW91cyBtaW5kcyB0aGluayBhbGlrZSA6KQ==', 'base64'));

const golden: GoldenCase[] = [
  {
    name: 'an audio message with alignment (charDurationsMs), then the final message',
    frames: [fixture('audio-alignment'), fixture('final')],
    events: [
      {
        audio: DOC_AUDIO,
        alignment: {
          chars: Array.from('Hello world'),
          startMs: [0, 3, 7, 9, 11, 12, 13, 15, 17, 19, 21],
          durationMs: [3, 4, 2, 2, 1, 1, 2, 2, 2, 2, 3],
        },
      },
    ],
    final: true,
  },
  {
    name: 'an audio message with the charsDurationsMs spelling',
    frames: [fixture('audio-alignment-chars-spelling'), fixture('final')],
    events: [
      {
        audio: DOC_AUDIO,
        alignment: {
          chars: Array.from('Hello '),
          startMs: [0, 70, 100, 130, 160, 200],
          durationMs: [70, 30, 30, 30, 40, 60],
        },
      },
    ],
    final: true,
  },
  {
    name: 'the inactivity error frame: retryable',
    frames: [fixture('error-input-timeout')],
    error: { retryable: true, code: 'input_timeout_exceeded' },
  },
  {
    name: 'the quota error frame: permanent',
    frames: [fixture('audio-alignment'), fixture('error-quota')],
    error: { retryable: false, code: 'quota_exceeded' },
  },
];

const sim = new TtsASimulator({ ttfbMs: 20, realtimeFactor: 5 });

runTtsConformance('tts_a', {
  adapter: new TtsAAdapter(),
  async start() {
    sim.addKey(KEY);
    return { baseUrl: await sim.start(), apiKey: KEY };
  },
  stop: () => sim.stop(),
  golden,
  replyNext: (frames) => sim.replyNext(frames),
  refuseNext: (status, retryAfterSeconds) => sim.failNext('*', { status, retryAfterSeconds }),
  setFirstByteDelay: (ms) => {
    sim.options.ttfbMs = ms;
  },
  cutNextAfterAudio: (ms) => sim.failAfterAudio(ms),
  lastStream() {
    const connection = sim.connections.at(-1)!;
    return {
      voiceId: connection.voiceId,
      modelId: connection.query.model_id,
      outputFormat: connection.query.output_format,
      voiceSettings: connection.voiceSettings,
      texts: connection.texts,
      flushes: connection.flushes,
      ended: connection.eos,
      closed: connection.closed,
    };
  },
  formatName: (format) => ttsAOutputFormat(format)!,
});

describe('tts_a', () => {
  const adapter = new TtsAAdapter();
  const own = new TtsASimulator({ ttfbMs: 0, realtimeFactor: 50 });
  let baseUrl = '';

  beforeAll(async () => {
    own.addKey(KEY);
    baseUrl = await own.start();
  });
  afterAll(() => own.stop());

  const options = (overrides: Partial<TtsStreamOptions> = {}): TtsStreamOptions => ({
    apiKey: KEY,
    baseUrl,
    voiceId: 'voice one',
    format: MULAW_8K,
    voiceSettings: {},
    signal: new AbortController().signal,
    ...overrides,
  });

  async function collect(events: AsyncIterable<TtsEvent>): Promise<TtsEvent[]> {
    const seen: TtsEvent[] = [];
    for await (const event of events) seen.push(event);
    return seen;
  }

  it('builds the stream URL from the base URL, voice, model, format and language', () => {
    const url = new URL(
      ttsAStreamUrl(
        options({ baseUrl: 'https://api.example.test/', modelId: 'eleven_flash_v2_5', language: 'fr' }),
      ),
    );
    expect(`${url.origin}${url.pathname}`).toBe(
      'wss://api.example.test/v1/text-to-speech/voice%20one/stream-input',
    );
    expect(Object.fromEntries(url.searchParams)).toEqual({
      model_id: 'eleven_flash_v2_5',
      output_format: 'ulaw_8000',
      auto_mode: 'true',
      language_code: 'fr',
    });
    expect(ttsAStreamUrl(options({ baseUrl: 'http://127.0.0.1:9' }))).toMatch(/^ws:\/\/127\.0\.0\.1:9\/v1\//);
  });

  it('sends a single space first, then each chunk ending with a space, a flush and the end of stream', async () => {
    const stream = await adapter.open(options({ voiceSettings: { stability: 0.5 } }));
    stream.sendText('Hello');
    stream.sendText('');
    stream.sendText('there. ');
    stream.flush();
    stream.end();
    stream.sendText('after the end');
    await collect(stream.events);
    const connection = own.connections.at(-1)!;
    expect(connection.voiceSettings).toEqual({ stability: 0.5 });
    expect(connection.messages).toEqual([
      { text: 'Hello ' },
      { text: 'there. ' },
      { text: ' ', flush: true },
      { text: '' },
    ]);
  });

  it('leaves voice_settings out of the first message when none are given', async () => {
    const stream = await adapter.open(options());
    stream.end();
    await collect(stream.events);
    expect(own.connections.at(-1)!.voiceSettings).toBeUndefined();
  });

  it('speaks phrase by phrase in auto mode, before the end of stream', async () => {
    const stream = await adapter.open(options());
    const reader = stream.events[Symbol.asyncIterator]();
    stream.sendText('First phrase, then more');
    const first = await reader.next();
    expect(first.value).toMatchObject({ type: 'audio' });
    expect(own.connections.at(-1)!.generations).toEqual(['First phrase,']);
    stream.end();
    while (!(await reader.next()).done);
    expect(own.connections.at(-1)!.generations).toEqual(['First phrase,', 'then more']);
  });

  it('fails permanently on a quota error frame, and retryably on the inactivity time-out', async () => {
    own.errorFrame('quota_exceeded');
    const quota = await adapter.open(options());
    await expect(collect(quota.events)).rejects.toMatchObject({ retryable: false, code: 'quota_exceeded' });

    const idle = new TtsASimulator({ inactivityTimeoutMs: 100 });
    idle.addKey(KEY);
    try {
      const stream = await adapter.open(options({ baseUrl: await idle.start() }));
      await expect(collect(stream.events)).rejects.toMatchObject({
        retryable: true,
        code: 'input_timeout_exceeded',
      });
      expect(idle.connections[0]).toMatchObject({ closed: true, closedBy: 'server' });
    } finally {
      await idle.stop();
    }
  });

  it('keeps a stream opened early alive with a single space until text comes', async () => {
    const idle = new TtsASimulator({ ttfbMs: 0, inactivityTimeoutMs: 200 });
    idle.addKey(KEY);
    try {
      const early = new TtsAAdapter({ keepAliveMs: 50 });
      const stream = await early.open(options({ baseUrl: await idle.start() }));
      const events = collect(stream.events);
      // Longer than the vendor's inactivity time-out: only the keep-alives hold the stream open.
      await new Promise((resolve) => setTimeout(resolve, 500));
      stream.sendText('At last.');
      stream.end();
      expect((await events).at(-1)).toEqual({ type: 'final' });
      const messages = idle.connections[0]!.messages;
      expect(messages.filter((message) => message.text === ' ').length).toBeGreaterThan(2);
      expect(messages.slice(-2)).toEqual([{ text: 'At last. ' }, { text: '' }]);
    } finally {
      await idle.stop();
    }
  });

  it('fails on an error frame sent mid-audio', async () => {
    own.failAfterAudio(100, 'internal_server_error');
    const stream = await adapter.open(options());
    stream.sendText('A sentence long enough to be cut.');
    stream.end();
    await expect(collect(stream.events)).rejects.toMatchObject({
      retryable: true,
      code: 'internal_server_error',
    });
  });

  it('checks a key sent in the first message when the handshake has none', async () => {
    // The adapter always sends the header; the simulator also speaks the vendor's other way.
    async function firstMessageKey(key: string): Promise<{ code: number; frames: string[] }> {
      const socket = new WebSocket(
        `${baseUrl.replace('http', 'ws')}/v1/text-to-speech/v/stream-input?output_format=ulaw_8000`,
      );
      const frames: string[] = [];
      socket.on('message', (data) => frames.push(data.toString()));
      await new Promise((resolve) => socket.once('open', resolve));
      socket.send(JSON.stringify({ text: ' ', xi_api_key: key }));
      socket.send(JSON.stringify({ text: '' }));
      const code = await new Promise<number>((resolve) => socket.once('close', resolve));
      return { code, frames };
    }
    const refused = await firstMessageKey('wrong');
    expect(refused.code).toBe(1008);
    expect(JSON.parse(refused.frames[0]!)).toMatchObject({ error: 'invalid_api_key' });
    const accepted = await firstMessageKey(KEY);
    expect(accepted.code).toBe(1000);
    expect(accepted.frames.map((frame) => JSON.parse(frame))).toEqual([{ isFinal: true }]);
  });

  it('reports an unreachable vendor as retryable, and an abort before the socket opens as the abort', async () => {
    const closed = new TtsASimulator();
    const url = await closed.start();
    await closed.stop();
    const error = await adapter.open(options({ baseUrl: url })).catch((reason: unknown) => reason);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).retryable).toBe(true);

    const controller = new AbortController();
    const opening = adapter.open(options({ signal: controller.signal }));
    controller.abort();
    await expect(opening).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('speaks an A-law call in μ-law from the vendor, turned into A-law byte for byte', async () => {
    const stream = await adapter.open(options({ format: ALAW_8K }));
    expect(own.connections.at(-1)!.query.output_format).toBe('ulaw_8000');
    stream.sendText('Hello there. ');
    stream.end();
    const audio = (await collect(stream.events)).flatMap((event) =>
      event.type === 'audio' ? [event.audio] : [],
    );
    const bytes = Buffer.concat(audio);
    expect(bytes.length).toBeGreaterThan(800);
    // The simulator's μ-law, as the same samples in A-law.
    const plain = await adapter.open(options());
    plain.sendText('Hello there. ');
    plain.end();
    const ulawBytes = Buffer.concat(
      (await collect(plain.events)).flatMap((event) => (event.type === 'audio' ? [event.audio] : [])),
    );
    expect(bytes).toEqual(Buffer.from(pcm16ToAlaw(ulawToPcm16(ulawBytes))));
  });

  it('refuses an output format the vendor does not offer before connecting', async () => {
    await expect(
      adapter.open(options({ format: { encoding: 'mulaw', sampleRate: 16000 } })),
    ).rejects.toMatchObject({ retryable: false, code: 'unsupported_format' });
  });
});
