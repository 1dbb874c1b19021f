/**
 * The caller's speech for speech-to-text tests: the recorded utterances (test/fixtures/voice/*.ulaw,
 * μ-law 8 kHz, and their texts), the same in another carrier's format, and sending audio in the
 * carriers' 20 ms frames; plus reading a stream's events up to a given one without letting go of it.
 */
import { readFileSync } from 'node:fs';
import type { SttEvent, SttStream } from '../../src/providers/stt/types.js';
import {
  type AudioFormat,
  decodeAudio,
  encodeAudio,
  FRAME_MS,
  frames,
  MULAW_8K,
  MULAW_SILENCE,
  silence as silenceOf,
} from '../../src/voice/audio.js';
import { resample } from '../../src/voice/resample.js';

const VOICE = 'test/fixtures/voice';
const TEXTS = JSON.parse(readFileSync(`${VOICE}/utterances.json`, 'utf8')) as Record<string, string>;

export const utterance = (name: string) => readFileSync(`${VOICE}/${name}.ulaw`);
export const utteranceText = (name: string) => TEXTS[name]!;
export const silence = (ms: number) => new Uint8Array((MULAW_8K.sampleRate * ms) / 1000).fill(MULAW_SILENCE);

/** A μ-law recording in another carrier's format (A-law 8 kHz, 16-bit PCM at 16 kHz). */
export function inFormat(format: AudioFormat, ulaw: Uint8Array): Uint8Array {
  const samples = decodeAudio(MULAW_8K, ulaw);
  return encodeAudio(format, resample(samples, MULAW_8K.sampleRate, format.sampleRate));
}

/** Sends audio in 20 ms frames, letting the event loop run every few frames. */
export async function speak(stream: SttStream, ...parts: Uint8Array[]): Promise<void> {
  await speakIn(MULAW_8K, stream, ...parts);
}

/** Sends audio of `format` in its 20 ms frames. */
export async function speakIn(format: AudioFormat, stream: SttStream, ...parts: Uint8Array[]): Promise<void> {
  const frameBytes = silenceOf(format, FRAME_MS).length;
  let sent = 0;
  for (const part of parts) {
    for (const frame of frames(part, frameBytes)) {
      stream.send(frame);
      if (++sent % 10 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

/**
 * Reads events until one satisfies `last` (included) or the stream ends, without letting go of the
 * stream (a `for await` that breaks would cancel it).
 */
export async function readUntil(stream: SttStream, last: (event: SttEvent) => boolean): Promise<SttEvent[]> {
  const iterator = stream.events[Symbol.asyncIterator]();
  const events: SttEvent[] = [];
  for (;;) {
    const step = await iterator.next();
    if (step.done) return events;
    events.push(step.value);
    if (last(step.value)) return events;
  }
}
