/**
 * The audio conversions the live path may use once: G.711 A-law beside μ-law, 16-bit PCM, and the
 * streamed resampler (chunking gives the same output as one piece; going down removes what the lower
 * rate cannot carry; a tone keeps its level and frequency).
 */
import { describe, expect, it } from 'vitest';
import {
  ALAW_8K,
  audioLevel,
  decodeAudio,
  encodeAudio,
  LINEAR16_16K,
  MULAW_8K,
  silence,
} from '../src/voice/audio.js';
import { Resampler, resample } from '../src/voice/resample.js';

function tone(hz: number, rate: number, seconds: number, amplitude = 10_000): Int16Array {
  const out = new Int16Array(Math.round(rate * seconds));
  for (let i = 0; i < out.length; i++)
    out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / rate));
  return out;
}

function rms(samples: Int16Array, from = 0, to = samples.length): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / (to - from));
}

/** Zero crossings per second: twice the frequency of a pure tone. */
function crossings(samples: Int16Array, rate: number): number {
  let count = 0;
  for (let i = 1; i < samples.length; i++) if (samples[i - 1]! < 0 !== samples[i]! < 0) count++;
  return (count * rate) / samples.length;
}

describe('G.711 and 16-bit PCM', () => {
  it('round-trips every A-law and μ-law byte through linear samples', () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    for (const format of [ALAW_8K, MULAW_8K]) {
      const back = encodeAudio(format, decodeAudio(format, all));
      // μ-law has two zeros (0x7f and 0xff) that encode back to one.
      const differing = [...all].filter((byte, i) => back[i] !== byte);
      expect(differing.length).toBeLessThanOrEqual(1);
    }
  });

  it('keeps a tone within the companding error, and 16-bit PCM exactly', () => {
    const samples = tone(440, 8000, 0.1);
    for (const format of [ALAW_8K, MULAW_8K]) {
      const back = decodeAudio(format, encodeAudio(format, samples));
      for (let i = 0; i < samples.length; i++)
        expect(Math.abs(back[i]! - samples[i]!)).toBeLessThanOrEqual(Math.abs(samples[i]!) / 16 + 16);
    }
    expect([...decodeAudio(LINEAR16_16K, encodeAudio(LINEAR16_16K, samples))]).toEqual([...samples]);
  });

  it('measures silence as silent and a tone at its level in every format', () => {
    for (const format of [ALAW_8K, MULAW_8K, LINEAR16_16K]) {
      expect(audioLevel(format, silence(format, 20))).toBeLessThan(10);
      const level = audioLevel(format, encodeAudio(format, tone(440, format.sampleRate, 0.1)));
      expect(level).toBeGreaterThan(6800);
      expect(level).toBeLessThan(7400);
    }
  });
});

describe('resampling', () => {
  it('gives the same output fed in 20 ms chunks as in one piece', () => {
    const input = tone(440, 24_000, 0.5);
    const whole = new Resampler(24_000, 8000).push(input);
    const chunked = new Resampler(24_000, 8000);
    const parts: number[] = [];
    for (let offset = 0; offset < input.length; offset += 480)
      parts.push(...chunked.push(input.subarray(offset, offset + 480)));
    expect(parts).toEqual([...whole]);
  });

  it.each([
    [24_000, 8000],
    [24_000, 16_000],
    [16_000, 8000],
    [8000, 16_000],
  ])('keeps a 440 Hz tone from %i Hz to %i Hz: its length, level and pitch', (from, to) => {
    const out = resample(tone(440, from, 1), from, to);
    expect(out.length).toBe(to);
    const level = rms(out, 200, out.length - 200);
    expect(level).toBeGreaterThan(7000 * 0.97);
    expect(level).toBeLessThan(7072 * 1.03);
    expect(crossings(out, to)).toBeCloseTo(880, -1);
  });

  it('removes what the lower rate cannot carry instead of folding it back', () => {
    // 5 kHz fits 24 kHz but not 8 kHz (Nyquist 4 kHz): unfiltered, it would alias to 3 kHz.
    const out = resample(tone(5000, 24_000, 1), 24_000, 8000);
    expect(rms(out, 200, out.length - 200)).toBeLessThan(70);
  });

  it('passes audio through untouched at the same rate', () => {
    const input = tone(440, 8000, 0.1);
    expect(new Resampler(8000, 8000).push(input)).toBe(input);
  });
});
