/**
 * Key tones both ways without a call: the tone generator (voice/dtmf-tones.ts) and the simulated
 * phone's Goertzel detector (sim/dtmf-detector.ts) round trip every key in each stream format, tell
 * repeated keys apart, keep a `w` pause, and hear no key in speech or silence.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DtmfDetector } from '../src/sim/dtmf-detector.js';
import { ALAW_8K, type AudioFormat, bytesFor, frames, LINEAR16_16K, MULAW_8K } from '../src/voice/audio.js';
import { dtmfAudio, dtmfFrequencies, GAP_MS, PAUSE_MS, TONE_MS } from '../src/voice/dtmf-tones.js';

const EVERY_KEY = '0123456789*#ABCD';

/** The keys a detector hears in `audio`, pushed in 20 ms frames as a phone plays them. */
function hear(format: AudioFormat, audio: Uint8Array) {
  const detector = new DtmfDetector(format);
  const heard = [];
  for (const frame of frames(audio, bytesFor(format, 20))) heard.push(...detector.push(frame));
  return heard.map((h) => ({ key: h.key, atMs: (h.atSample * 1000) / format.sampleRate }));
}

describe('key tones', () => {
  it('uses the Q.23 pair of each key', () => {
    expect(dtmfFrequencies('1')).toEqual([697, 1209]);
    expect(dtmfFrequencies('0')).toEqual([941, 1336]);
    expect(dtmfFrequencies('#')).toEqual([941, 1477]);
    expect(dtmfFrequencies('D')).toEqual([941, 1633]);
    expect(dtmfFrequencies('x')).toBeUndefined();
    expect(() => dtmfAudio('12x', MULAW_8K)).toThrow(/DTMF/);
  });

  for (const [name, format] of [
    ['μ-law 8 kHz', MULAW_8K],
    ['L16 16 kHz', LINEAR16_16K],
    ['A-law 8 kHz', ALAW_8K],
  ] as const) {
    it(`are heard back, every key once and in order, in ${name}`, () => {
      const audio = dtmfAudio(EVERY_KEY, format);
      expect(audio.length).toBe(bytesFor(format, EVERY_KEY.length * (TONE_MS + GAP_MS)));
      const heard = hear(format, audio);
      expect(heard.map((h) => h.key).join('')).toBe(EVERY_KEY);
      // Each key is heard within its own tone's time.
      heard.forEach((h, i) => {
        expect(h.atMs).toBeGreaterThanOrEqual(i * (TONE_MS + GAP_MS) - 1);
        expect(h.atMs).toBeLessThan(i * (TONE_MS + GAP_MS) + TONE_MS);
      });
    });
  }

  it('tells a repeated key apart and keeps a pause', () => {
    const heard = hear(MULAW_8K, dtmfAudio('11w2', MULAW_8K));
    expect(heard.map((h) => h.key)).toEqual(['1', '1', '2']);
    // The `w` waited before the 2.
    expect(heard[2]!.atMs).toBeGreaterThanOrEqual(2 * (TONE_MS + GAP_MS) + PAUSE_MS - 1);
  });

  it('hears no key in speech or silence', () => {
    for (const name of ['book-appointment', 'account-number', 'three-oclock']) {
      const speech = readFileSync(new URL(`./fixtures/voice/${name}.ulaw`, import.meta.url));
      expect(hear(MULAW_8K, new Uint8Array(speech))).toEqual([]);
    }
    expect(hear(MULAW_8K, new Uint8Array(8000).fill(0xff))).toEqual([]);
  });
});
