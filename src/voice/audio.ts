/**
 * Audio as the call runtime carries it. Inside a session audio stays in the carrier's own format
 * (μ-law at 8 kHz for carrier_a): the speech-to-text vendor takes it as is, the text-to-speech vendor
 * is asked for it, so nothing is transcoded on the live path. Where a local stage needs samples
 * (the VAD, the simulators' speech detection) it decodes with the G.711 tables here.
 */

export type AudioEncoding = 'mulaw' | 'alaw' | 'linear16';

export interface AudioFormat {
  encoding: AudioEncoding;
  sampleRate: 8000 | 16000;
}

/** What carrier_a streams and plays: G.711 μ-law, 8 kHz, mono. */
export const MULAW_8K: AudioFormat = { encoding: 'mulaw', sampleRate: 8000 };

/** The carriers' frame: 20 ms of audio. */
export const FRAME_MS = 20;

/** Bytes in `ms` milliseconds of audio in `format` (mono). */
export function bytesFor(format: AudioFormat, ms: number): number {
  const samples = Math.round((format.sampleRate * ms) / 1000);
  return format.encoding === 'linear16' ? samples * 2 : samples;
}

/** Milliseconds of audio in `bytes` bytes of `format` (mono). */
export function durationMs(format: AudioFormat, bytes: number): number {
  const samples = format.encoding === 'linear16' ? bytes / 2 : bytes;
  return (samples * 1000) / format.sampleRate;
}

/** The μ-law byte of silence (a decoded zero). */
export const MULAW_SILENCE = 0xff;

const MULAW_DECODE = new Int16Array(256);
for (let i = 0; i < 256; i++) {
  const u = ~i & 0xff;
  const exponent = (u >> 4) & 0x07;
  const magnitude = ((((u & 0x0f) << 3) + 0x84) << exponent) - 0x84;
  MULAW_DECODE[i] = u & 0x80 ? -magnitude : magnitude;
}

/** G.711 μ-law bytes → 16-bit linear samples. */
export function ulawToPcm16(bytes: Uint8Array): Int16Array {
  const out = new Int16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = MULAW_DECODE[bytes[i]!]!;
  return out;
}

const BIAS = 0x84;
const CLIP = 32635;

function encodeSample(sample: number): number {
  const sign = sample < 0 ? 0x80 : 0;
  let magnitude = Math.min(Math.abs(sample), CLIP) + BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (magnitude & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (magnitude >> (exponent + 3)) & 0x0f;
  magnitude = sign | (exponent << 4) | mantissa;
  return ~magnitude & 0xff;
}

/** 16-bit linear samples → G.711 μ-law bytes. */
export function pcm16ToUlaw(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = encodeSample(samples[i]!);
  return out;
}

/** Root-mean-square level of μ-law audio, 0…32767: a cheap loudness for simulators and tests. */
export function ulawLevel(bytes: Uint8Array): number {
  if (bytes.length === 0) return 0;
  let sum = 0;
  for (let i = 0; i < bytes.length; i++) {
    const sample = MULAW_DECODE[bytes[i]!]!;
    sum += sample * sample;
  }
  return Math.sqrt(sum / bytes.length);
}

/** Splits audio into frames of `frameBytes` (the last one may be shorter). */
export function* frames(audio: Uint8Array, frameBytes: number): Generator<Uint8Array> {
  for (let offset = 0; offset < audio.length; offset += frameBytes) {
    yield audio.subarray(offset, Math.min(offset + frameBytes, audio.length));
  }
}
