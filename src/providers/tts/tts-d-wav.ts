/**
 * The WAV that tts_d's streaming synthesis answers with, read as it arrives. The vendor documents a
 * single-channel RIFF/WAVE whose header carries more than the canonical 44 bytes: `fmt `, then `cue `
 * points and a `LIST`/`adtl` of `ltxt` labels giving each grapheme (`grph`) and phoneme (`phon`) its
 * start and length in samples, then `data` — and older models put 0xFFFFFFFF in the sizes they do not
 * know yet. So the header is parsed chunk by chunk (any order, unknown chunks skipped, odd sizes
 * padded), however the bytes are split across network reads, and everything after the `data` chunk's
 * header is audio. A body that is not such a WAV fails with a permanent `protocol` ProviderError.
 */
import { ProviderError } from '../errors.js';

export const TTS_D = 'tts_d';

/** The WAVE format tags the vendor's precisions come as (and 0xFFFE, which names one inside). */
export const WAVE_PCM = 1;
export const WAVE_FLOAT = 3;
export const WAVE_ALAW = 6;
export const WAVE_MULAW = 7;
const WAVE_EXTENSIBLE = 0xfffe;
/** A size the writer did not know when it sent the header. */
export const UNKNOWN_SIZE = 0xffffffff;
/** More header than this is no header the vendor sends: refuse rather than buffer without end. */
const MAX_HEADER_BYTES = 1 << 20;

export interface WavFormat {
  formatTag: number;
  channels: number;
  sampleRate: number;
  bitsPerSample: number;
}

/** A grapheme the vendor says it speaks, and where (in samples from the audio's start). */
export interface Grapheme {
  text: string;
  startSample: number;
  lengthSamples: number;
}

export interface WavHeader {
  format: WavFormat;
  /** In the order they are spoken. */
  graphemes: Grapheme[];
  /** The audio's length in bytes, when the header says it. */
  dataBytes?: number;
}

export function wavProtocolError(detail: string): ProviderError {
  return new ProviderError(`${TTS_D} answered audio that is not the WAV it documents (${detail})`, {
    provider: TTS_D,
    retryable: false,
    code: 'protocol',
  });
}

const fourCc = (bytes: Uint8Array, at: number) =>
  String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!);

/** Reads a streamed WAV: `push` each piece of the body; the header comes once, then audio bytes. */
export class WavStreamReader {
  #pending = new Uint8Array(0);
  #header: WavHeader | undefined;
  #format: WavFormat | undefined;
  readonly #cues = new Map<number, number>();
  readonly #labels: Array<{ cueId: number; lengthSamples: number; text: string }> = [];
  #riffChecked = false;

  get header(): WavHeader | undefined {
    return this.#header;
  }

  /** The audio bytes in `piece` (possibly none); throws a `protocol` ProviderError on a bad header. */
  push(piece: Uint8Array): Uint8Array {
    if (this.#header) return piece;
    const joined = new Uint8Array(this.#pending.length + piece.length);
    joined.set(this.#pending);
    joined.set(piece, this.#pending.length);
    let at = 0;
    if (!this.#riffChecked) {
      if (joined.length < 12) return this.#keep(joined, 0);
      if (fourCc(joined, 0) !== 'RIFF' || fourCc(joined, 8) !== 'WAVE')
        throw wavProtocolError('no RIFF/WAVE');
      this.#riffChecked = true;
      at = 12;
    }
    const view = new DataView(joined.buffer, joined.byteOffset, joined.byteLength);
    while (joined.length - at >= 8) {
      const id = fourCc(joined, at);
      const size = view.getUint32(at + 4, true);
      if (id === 'data') {
        this.#finish(size);
        return joined.subarray(at + 8);
      }
      if (size === UNKNOWN_SIZE) throw wavProtocolError(`a ${id.trim()} chunk of unknown size`);
      const padded = size + (size % 2);
      if (joined.length - at - 8 < padded) break;
      this.#chunk(id, joined.subarray(at + 8, at + 8 + size));
      at += 8 + padded;
    }
    return this.#keep(joined, at);
  }

  #keep(joined: Uint8Array, from: number): Uint8Array {
    this.#pending = joined.slice(from);
    if (this.#pending.length > MAX_HEADER_BYTES) throw wavProtocolError('a header without end');
    return new Uint8Array(0);
  }

  #chunk(id: string, body: Uint8Array): void {
    const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
    if (id === 'fmt ') {
      if (body.length < 16) throw wavProtocolError('a short fmt chunk');
      let formatTag = view.getUint16(0, true);
      // WAVE_FORMAT_EXTENSIBLE names the real format in the first two bytes of its sub-format GUID.
      if (formatTag === WAVE_EXTENSIBLE && body.length >= 26) formatTag = view.getUint16(24, true);
      this.#format = {
        formatTag,
        channels: view.getUint16(2, true),
        sampleRate: view.getUint32(4, true),
        bitsPerSample: view.getUint16(14, true),
      };
    } else if (id === 'cue ' && body.length >= 4) {
      const count = view.getUint32(0, true);
      // Each cue point: id, position, chunk id, chunk start, block start, sample offset (24 bytes).
      for (let i = 0; i < count && 4 + (i + 1) * 24 <= body.length; i++) {
        const base = 4 + i * 24;
        this.#cues.set(view.getUint32(base, true), view.getUint32(base + 20, true));
      }
    } else if (id === 'LIST' && body.length >= 4 && fourCc(body, 0) === 'adtl') {
      this.#labelsOf(body.subarray(4));
    }
  }

  /** The `ltxt` labels of an associated-data list: cue id, length in samples, purpose, text. */
  #labelsOf(list: Uint8Array): void {
    const view = new DataView(list.buffer, list.byteOffset, list.byteLength);
    let at = 0;
    while (list.length - at >= 8) {
      const id = fourCc(list, at);
      const size = view.getUint32(at + 4, true);
      if (at + 8 + size > list.length) break;
      if (id === 'ltxt' && size >= 20 && fourCc(list, at + 16) === 'grph') {
        const text = Buffer.from(list.subarray(at + 28, at + 8 + size))
          .toString('utf8')
          .replace(/\0+$/, '');
        this.#labels.push({
          cueId: view.getUint32(at + 8, true),
          lengthSamples: view.getUint32(at + 12, true),
          text,
        });
      }
      // Sub-chunks are word-aligned: an odd text length is followed by a pad byte.
      at += 8 + size + (size % 2);
    }
  }

  #finish(dataSize: number): void {
    const format = this.#format;
    if (!format) throw wavProtocolError('data before fmt');
    if (format.channels !== 1) throw wavProtocolError(`${format.channels} channels`);
    const graphemes = this.#labels.flatMap((label) => {
      const startSample = this.#cues.get(label.cueId);
      return startSample === undefined || label.text === ''
        ? []
        : [{ text: label.text, startSample, lengthSamples: label.lengthSamples }];
    });
    graphemes.sort((a, b) => a.startSample - b.startSample);
    this.#header = {
      format,
      graphemes,
      ...(dataSize === UNKNOWN_SIZE || dataSize === 0 ? {} : { dataBytes: dataSize }),
    };
    this.#pending = new Uint8Array(0);
  }
}
