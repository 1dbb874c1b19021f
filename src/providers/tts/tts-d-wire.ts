/**
 * tts_d's streaming synthesis request, shared by the adapter (tts-d.ts) and the simulator
 * (sim/tts-d.ts): `POST {base}/stream` with `Authorization: Bearer <key>` and a JSON body —
 * `voice_uuid`, `data` (text or SSML, at most 2,000 characters), `project_uuid`, `precision`
 * (`PCM_32`, `PCM_24`, `PCM_16` or `MULAW`), `sample_rate` (8000, 16000, 22050, 32000, 44100 or
 * 48000), and optionally `model`, `use_hd`, `apply_custom_pronunciations`. The answer is a streamed
 * WAV (tts-d-wav.ts); a failure is an HTTP status with `{"success":false,"message":"…"}`.
 *
 * The carrier's format is asked for where the vendor has it: μ-law 8 kHz as `MULAW`, 16-bit PCM as
 * `PCM_16` at the carrier's rate; A-law, which the vendor lacks, as `PCM_16` at 8 kHz, encoded here.
 * Whatever WAV actually comes back is brought to the carrier's format once (`AudioConverter`):
 * unchanged when it already is, else decoded, resampled if its rate differs, and encoded.
 */
import { type AudioFormat, alawToPcm16, encodeAudio, l16ToPcm16, ulawToPcm16 } from '../../voice/audio.js';
import { Resampler } from '../../voice/resample.js';
import {
  TTS_D,
  WAVE_ALAW,
  WAVE_FLOAT,
  WAVE_MULAW,
  WAVE_PCM,
  type WavFormat,
  wavProtocolError,
} from './tts-d-wav.js';

export { TTS_D };

export const TTS_D_STREAM_PATH = '/stream';
export const TTS_D_MAX_CHARACTERS = 2000;
export const TTS_D_PRECISIONS = ['PCM_32', 'PCM_24', 'PCM_16', 'MULAW'] as const;
export const TTS_D_SAMPLE_RATES = [8000, 16000, 22050, 32000, 44100, 48000] as const;
export type TtsDPrecision = (typeof TTS_D_PRECISIONS)[number];

export interface TtsDRequestBody {
  voice_uuid: string;
  data: string;
  project_uuid?: string;
  precision?: TtsDPrecision;
  sample_rate?: number;
  model?: string;
  use_hd?: boolean;
  apply_custom_pronunciations?: boolean;
}

/** The precision and rate to ask for, for a carrier's format (A-law comes as PCM_16 and is encoded here). */
export function ttsDRequestAudio(format: AudioFormat): { precision: TtsDPrecision; sample_rate: number } {
  if (format.encoding === 'mulaw' && format.sampleRate === 8000)
    return { precision: 'MULAW', sample_rate: 8000 };
  return { precision: 'PCM_16', sample_rate: format.sampleRate };
}

/** The WAV format the vendor answers a request's precision and rate with (for the simulator). */
export function ttsDWavFormat(precision: TtsDPrecision, sampleRate: number): WavFormat {
  if (precision === 'MULAW') return { formatTag: WAVE_MULAW, channels: 1, sampleRate, bitsPerSample: 8 };
  const bits = Number(precision.slice(4));
  return { formatTag: WAVE_PCM, channels: 1, sampleRate, bitsPerSample: bits };
}

/** Whether audio of `source` can go to the carrier byte for byte. */
function sameAsCarrier(source: WavFormat, target: AudioFormat): boolean {
  if (source.sampleRate !== target.sampleRate) return false;
  if (target.encoding === 'mulaw') return source.formatTag === WAVE_MULAW;
  if (target.encoding === 'alaw') return source.formatTag === WAVE_ALAW;
  return source.formatTag === WAVE_PCM && source.bitsPerSample === 16;
}

/** Bytes per sample of a format this adapter can decode; throws for one it cannot. */
function sampleBytes(source: WavFormat): number {
  const { formatTag, bitsPerSample } = source;
  if ((formatTag === WAVE_MULAW || formatTag === WAVE_ALAW) && bitsPerSample === 8) return 1;
  if (formatTag === WAVE_PCM && [8, 16, 24, 32].includes(bitsPerSample)) return bitsPerSample / 8;
  if (formatTag === WAVE_FLOAT && bitsPerSample === 32) return 4;
  throw wavProtocolError(`format ${formatTag} with ${bitsPerSample}-bit samples`);
}

function decode(source: WavFormat, bytes: Uint8Array): Int16Array {
  if (source.formatTag === WAVE_MULAW) return ulawToPcm16(bytes);
  if (source.formatTag === WAVE_ALAW) return alawToPcm16(bytes);
  if (source.formatTag === WAVE_PCM && source.bitsPerSample === 16) return l16ToPcm16(bytes);
  const width = sampleBytes(source);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Int16Array(bytes.length / width);
  for (let i = 0; i < out.length; i++) {
    const at = i * width;
    if (source.formatTag === WAVE_FLOAT) {
      const value = Math.round(view.getFloat32(at, true) * 32767);
      out[i] = Math.max(-32768, Math.min(32767, value));
    } else if (width === 1) out[i] = (view.getUint8(at) - 128) << 8;
    else if (width === 3) out[i] = view.getInt16(at + 1, true);
    else out[i] = view.getInt32(at, true) >> 16;
  }
  return out;
}

/** One request's audio, from the WAV's format to the carrier's, in pieces as they arrive. */
export class AudioConverter {
  readonly passthrough: boolean;
  readonly #width: number;
  readonly #resampler: Resampler | undefined;
  /** Bytes of a sample split between two network reads. */
  #rest = new Uint8Array(0);

  constructor(
    private readonly source: WavFormat,
    private readonly target: AudioFormat,
  ) {
    this.passthrough = sameAsCarrier(source, target);
    this.#width = sampleBytes(source);
    this.#resampler =
      !this.passthrough && source.sampleRate !== target.sampleRate
        ? new Resampler(source.sampleRate, target.sampleRate)
        : undefined;
  }

  /** Input samples taken and output samples given, so `end` gives exactly the converted length. */
  #samplesIn = 0;
  #samplesOut = 0;

  push(bytes: Uint8Array): Uint8Array {
    return this.#convert(bytes);
  }

  /** The audio the resampler still holds (its filter reaches past the last sample): flushed with silence. */
  end(): Uint8Array {
    const resampler = this.#resampler;
    if (!resampler) return new Uint8Array(0);
    const wanted = Math.round((this.#samplesIn * this.target.sampleRate) / this.source.sampleRate);
    // 2 ms of silence is more than the filter's reach at any of the vendor's rates.
    const tail = resampler.push(new Int16Array(Math.ceil(this.source.sampleRate / 500)));
    const samples = tail.subarray(0, Math.max(0, wanted - this.#samplesOut));
    this.#samplesOut += samples.length;
    return encodeAudio(this.target, samples);
  }

  #convert(bytes: Uint8Array): Uint8Array {
    let input = bytes;
    if (this.#rest.length > 0) {
      input = new Uint8Array(this.#rest.length + bytes.length);
      input.set(this.#rest);
      input.set(bytes, this.#rest.length);
    }
    const whole = input.length - (input.length % this.#width);
    this.#rest = input.slice(whole);
    const complete = input.subarray(0, whole);
    this.#samplesIn += whole / this.#width;
    if (this.passthrough || complete.length === 0) return complete;
    const decoded = decode(this.source, complete);
    const samples = this.#resampler ? this.#resampler.push(decoded) : decoded;
    this.#samplesOut += samples.length;
    return encodeAudio(this.target, samples);
  }
}

/** Splits text longer than the vendor takes at once, at sentence ends, else at spaces. */
export function ttsDPieces(text: string, max = TTS_D_MAX_CHARACTERS): string[] {
  const pieces: string[] = [];
  let rest = text.trim();
  while (rest.length > max) {
    const window = rest.slice(0, max + 1);
    const sentence = Math.max(...['. ', '! ', '? ', '; '].map((end) => window.lastIndexOf(end)));
    const cut = sentence > 0 ? sentence + 1 : window.lastIndexOf(' ') > 0 ? window.lastIndexOf(' ') : max;
    pieces.push(rest.slice(0, cut).trim());
    rest = rest.slice(cut).trim();
  }
  if (rest !== '') pieces.push(rest);
  return pieces;
}

/** The vendor's message in a failure body (`{"success":false,"message":"…"}`), if any. */
export function ttsDFailureMessage(body: string): string | undefined {
  try {
    const parsed = JSON.parse(body) as { message?: unknown; error?: unknown; detail?: unknown };
    const message = parsed.message ?? parsed.error ?? parsed.detail;
    return typeof message === 'string' ? message.slice(0, 200) : undefined;
  } catch {
    return body.trim() === '' ? undefined : body.trim().slice(0, 200);
  }
}
