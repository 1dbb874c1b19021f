/**
 * Key tones as audio (in-band DTMF), for a carrier whose media stream has no way to send a key
 * (carrier_a): each key is the sum of one low and one high sine of ITU-T Q.23, played for TONE_MS and
 * followed by GAP_MS of silence; `w` is PAUSE_MS of silence. The audio is in the stream's own format,
 * so the playout sends it like speech.
 */
import { type AudioFormat, encodeAudio } from './audio.js';

/** Q.23: the row (low) and column (high) frequency of each key, in Hz. */
export const DTMF_LOW = [697, 770, 852, 941] as const;
export const DTMF_HIGH = [1209, 1336, 1477, 1633] as const;
export const DTMF_KEYS = ['123A', '456B', '789C', '*0#D'] as const;

/** How long a key sounds, and the silence after it (Q.24 asks for at least 40 ms of each). */
export const TONE_MS = 100;
export const GAP_MS = 60;
/** What `w` waits. */
export const PAUSE_MS = 500;

/** Each sine's peak: two together stay at about -6 dBFS, loud and far from clipping. */
const AMPLITUDE = 0.25 * 32767;
/** Each tone fades in and out over this long, so its edges do not click. */
const RAMP_MS = 3;

/** The two frequencies of a key (0-9, *, #, A-D), or undefined for anything else. */
export function dtmfFrequencies(key: string): [number, number] | undefined {
  for (const [row, keys] of DTMF_KEYS.entries()) {
    const column = keys.indexOf(key.toUpperCase());
    if (column >= 0 && key.length === 1) return [DTMF_LOW[row]!, DTMF_HIGH[column]!];
  }
  return undefined;
}

/** The audio of `digits` (0-9, *, #, A-D, `w` for a pause) in `format`; throws on anything else. */
export function dtmfAudio(digits: string, format: AudioFormat): Uint8Array {
  const rate = format.sampleRate;
  const samplesOf = (ms: number) => Math.round((rate * ms) / 1000);
  let total = 0;
  for (const key of digits) total += key === 'w' ? samplesOf(PAUSE_MS) : samplesOf(TONE_MS + GAP_MS);
  const samples = new Int16Array(total);
  const tone = samplesOf(TONE_MS);
  const ramp = samplesOf(RAMP_MS);
  let at = 0;
  for (const key of digits) {
    if (key === 'w') {
      at += samplesOf(PAUSE_MS);
      continue;
    }
    const pair = dtmfFrequencies(key);
    if (!pair) throw new Error(`not a DTMF key: ${key}`);
    const [low, high] = pair.map((hz) => (2 * Math.PI * hz) / rate) as [number, number];
    for (let i = 0; i < tone; i++) {
      const edge = Math.min(1, i / ramp, (tone - 1 - i) / ramp);
      samples[at + i] = Math.round(AMPLITUDE * edge * (Math.sin(low * i) + Math.sin(high * i)));
    }
    at += samplesOf(TONE_MS + GAP_MS);
  }
  return encodeAudio(format, samples);
}
