/**
 * stt_a (live streaming transcription) against its simulator over loopback WebSockets: the STT
 * conformance suite, then what is stt_a's own — the handshake URL, a refusal's `dg-error`, and the
 * simulator's closing `Metadata` and per-connection scripts.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ProviderError } from '../src/providers/errors.js';
import { parseSttAMessage, SttAAdapter, sttAListenUrl } from '../src/providers/stt/stt-a.js';
import type { SttStreamOptions } from '../src/providers/stt/types.js';
import { SttASimulator } from '../src/sim/stt-a.js';
import { type AudioFormat, MULAW_8K, pcm16ToUlaw } from '../src/voice/audio.js';
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

function keywordsOf(query: URLSearchParams): SeenStream['keywords'] {
  return query.getAll('keywords').map((k) => {
    const [keyword, intensifier] = k.split(':');
    return intensifier === undefined
      ? { keyword: keyword! }
      : { keyword: keyword!, intensifier: Number(intensifier) };
  });
}

/** The handshake's parameters, read back into the contract's terms. */
function settingsOf(query: URLSearchParams): SeenStream['settings'] {
  const endpointing = query.get('endpointing');
  return {
    model: query.get('model') ?? '',
    language: query.get('language') ?? '',
    format: {
      encoding: query.get('encoding') as AudioFormat['encoding'],
      sampleRate: Number(query.get('sample_rate')) as AudioFormat['sampleRate'],
    },
    endpointingMs: endpointing === null || endpointing === 'false' ? 0 : Number(endpointing),
    utteranceEndMs: Number(query.get('utterance_end_ms') ?? 0),
    interimResults: query.get('interim_results') === 'true',
    punctuate: query.get('punctuate') === 'true',
    smartFormat: query.get('smart_format') === 'true',
    keyterms: query.getAll('keyterm'),
    keywords: keywordsOf(query),
  };
}

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
      settings: settingsOf(c.query),
      keyterms: c.query.getAll('keyterm'),
      keywords: keywordsOf(c.query),
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

  it('passes interim_results as set, and asks for no utterance end without it', () => {
    const url = new URL(sttAListenUrl({ ...base, interimResults: false }));
    expect(url.searchParams.get('interim_results')).toBe('false');
    expect(url.searchParams.has('utterance_end_ms')).toBe(false);
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
    sim.failNext(key, { status: 400, message: 'Keyterm prompting is only available for Nova-3.' });
    const error = await open().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ retryable: false, status: 400 });
    expect((error as Error).message).toContain('Keyterm prompting is only available for Nova-3.');
  });

  it('refuses at the handshake what the vendor refuses', async () => {
    const handshake = async (query: string) => {
      const socket = new WebSocket(`${sim.baseUrl.replace('http', 'ws')}/v1/listen?${query}`, {
        headers: { Authorization: `Token ${key}` },
      });
      return new Promise<number>((resolve) => {
        socket.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0));
        socket.once('open', () => {
          socket.terminate();
          resolve(101);
        });
      });
    };
    const base = 'encoding=alaw&sample_rate=8000&interim_results=true';
    expect(await handshake(base)).toBe(101);
    expect(await handshake(`${base}&model=nova-3&keywords=Acme`)).toBe(400);
    expect(await handshake(`${base}&model=nova-2&keyterm=Acme`)).toBe(400);
    expect(
      await handshake('encoding=alaw&sample_rate=8000&interim_results=false&utterance_end_ms=1000'),
    ).toBe(400);
    expect(await handshake(`${base}&punctuate=yes`)).toBe(400);
    expect(await handshake('encoding=opus&sample_rate=8000')).toBe(400);
    expect(await handshake('encoding=mulaw')).toBe(400);
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
