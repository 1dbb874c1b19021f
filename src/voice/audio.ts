/**
 * Audio as the call runtime carries it. Inside a session audio stays in the carrier's own format
 * (μ-law at 8 kHz for carrier_a, μ-law or A-law for carrier_b, 16-bit PCM at 16 kHz for carrier_c):
 * the speech-to-text vendor takes it as is, the text-to-speech vendor is asked for it (or its output
 * is converted once, `resample.ts`), so nothing is transcoded twice on the live path. Where a local
 * stage needs samples (the VAD, the simulators' speech detection) it decodes with the tables here.
 */

export type AudioEncoding = 'mulaw' | 'alaw' | 'linear16';

export interface AudioFormat {
  encoding: AudioEncoding;
  sampleRate: 8000 | 16000;
}

/** What carrier_a streams and plays: G.711 μ-law, 8 kHz, mono. */
export const MULAW_8K: AudioFormat = { encoding: 'mulaw', sampleRate: 8000 };

/** What carrier_b may stream instead: G.711 A-law, 8 kHz, mono. */
export const ALAW_8K: AudioFormat = { encoding: 'alaw', sampleRate: 8000 };
/** What carrier_c streams and plays: 16-bit signed little-endian PCM, 16 kHz, mono. */
export const LINEAR16_16K: AudioFormat = { encoding: 'linear16', sampleRate: 16000 };

export function sameFormat(a: AudioFormat, b: AudioFormat): boolean {
  return a.encoding === b.encoding && a.sampleRate === b.sampleRate;
}

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

const ALAW_DECODE = new Int16Array(256);
for (let i = 0; i < 256; i++) {
  const a = i ^ 0x55;
  const exponent = (a >> 4) & 0x07;
  let magnitude = (a & 0x0f) << 4;
  magnitude = exponent === 0 ? magnitude + 8 : (magnitude + 0x108) << (exponent - 1);
  ALAW_DECODE[i] = a & 0x80 ? magnitude : -magnitude;
}

/** G.711 A-law bytes → 16-bit linear samples. */
export function alawToPcm16(bytes: Uint8Array): Int16Array {
  const out = new Int16Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) out[i] = ALAW_DECODE[bytes[i]!]!;
  return out;
}

function encodeAlawSample(sample: number): number {
  const sign = sample >= 0 ? 0x80 : 0;
  const magnitude = Math.min(sample >= 0 ? sample : -sample - 1, 32767) >> 3;
  let exponent = 0;
  while (exponent < 7 && magnitude >= 32 << exponent) exponent++;
  const mantissa = exponent === 0 ? magnitude >> 1 : (magnitude >> exponent) & 0x0f;
  return (sign | (exponent << 4) | mantissa) ^ 0x55;
}

/** 16-bit linear samples → G.711 A-law bytes. */
export function pcm16ToAlaw(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length);
  for (let i = 0; i < samples.length; i++) out[i] = encodeAlawSample(samples[i]!);
  return out;
}

/** 16-bit little-endian PCM bytes → samples (a trailing odd byte is ignored). */
export function l16ToPcm16(bytes: Uint8Array): Int16Array {
  const count = bytes.length >> 1;
  const out = new Int16Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset, count * 2);
  for (let i = 0; i < count; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

/** Samples → 16-bit little-endian PCM bytes. */
export function pcm16ToL16(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(samples.length * 2);
  const view = new DataView(out.buffer);
  for (let i = 0; i < samples.length; i++) view.setInt16(i * 2, samples[i]!, true);
  return out;
}

/** Audio of `format` → 16-bit linear samples (at the format's own rate). */
export function decodeAudio(format: AudioFormat, bytes: Uint8Array): Int16Array {
  if (format.encoding === 'mulaw') return ulawToPcm16(bytes);
  if (format.encoding === 'alaw') return alawToPcm16(bytes);
  return l16ToPcm16(bytes);
}

/** 16-bit linear samples → audio of `format` (already at the format's rate). */
export function encodeAudio(format: AudioFormat, samples: Int16Array): Uint8Array {
  if (format.encoding === 'mulaw') return pcm16ToUlaw(samples);
  if (format.encoding === 'alaw') return pcm16ToAlaw(samples);
  return pcm16ToL16(samples);
}

/** `ms` of silence in `format`. */
export function silence(format: AudioFormat, ms: number): Uint8Array {
  const bytes = new Uint8Array(bytesFor(format, ms));
  if (format.encoding === 'mulaw') bytes.fill(MULAW_SILENCE);
  else if (format.encoding === 'alaw') bytes.fill(0xd5);
  return bytes;
}

/** Root-mean-square level of audio in any format, 0…32767. */
export function audioLevel(format: AudioFormat, bytes: Uint8Array): number {
  if (format.encoding === 'mulaw') return ulawLevel(bytes);
  const samples = decodeAudio(format, bytes);
  if (samples.length === 0) return 0;
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / samples.length);
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
