/**
 * The simulated phone's ear for key tones (in-band DTMF): decoded samples are cut into blocks of
 * about 25 ms and each block's power at the eight Q.23 frequencies is measured with the Goertzel
 * algorithm. A block holds a key when one low and one high frequency carry most of its energy, each
 * clearly above the others of its group, and neither is far louder than the other (twist); a key is
 * heard once it holds for two blocks in a row, and heard again only after a block without it — so a
 * 100 ms tone is one key, and speech (whose energy spreads) is none.
 */

import { type AudioFormat, decodeAudio } from '../voice/audio.js';
import { DTMF_HIGH, DTMF_KEYS, DTMF_LOW } from '../voice/dtmf-tones.js';
import { goertzelPower } from '../voice/goertzel.js';

/** Block length in ms: 205 samples at 8 kHz, the classic choice for the eight frequencies. */
const BLOCK_MS = 25.625;
/** The two tones together carry at least this share of the block's energy. */
const MIN_TONE_SHARE = 0.6;
/** Each group's strongest frequency is at least this many times the next strongest. */
const MIN_PEAK_RATIO = 6;
/** The louder tone is at most this many times the softer (about 8 dB of twist). */
const MAX_TWIST = 6.3;
/** Blocks quieter than this RMS (of 32767) are silence: no key, and no work. */
const MIN_LEVEL = 200;

export interface HeardKey {
  key: string;
  /** The sample (from the first pushed) where the block that confirmed the key began. */
  atSample: number;
}

export class DtmfDetector {
  readonly #format: AudioFormat;
  readonly #block: Float64Array;
  readonly #coefficients: number[];
  #filled = 0;
  #samples = 0;
  /** The key of the last block, and whether it was already reported. */
  #last: string | undefined;
  #reported = false;

  constructor(format: AudioFormat) {
    this.#format = format;
    this.#block = new Float64Array(Math.round((format.sampleRate * BLOCK_MS) / 1000));
    this.#coefficients = [...DTMF_LOW, ...DTMF_HIGH].map(
      (hz) => 2 * Math.cos((2 * Math.PI * hz) / format.sampleRate),
    );
  }

  /** Audio in the detector's format, as it plays; answers the keys it completed. */
  push(audio: Uint8Array): HeardKey[] {
    const samples = decodeAudio(this.#format, audio);
    const heard: HeardKey[] = [];
    for (const sample of samples) {
      this.#block[this.#filled++] = sample;
      if (this.#filled < this.#block.length) continue;
      const start = this.#samples;
      this.#samples += this.#filled;
      this.#filled = 0;
      const key = this.#keyOf(this.#block);
      if (key !== undefined && key === this.#last && !this.#reported) {
        heard.push({ key, atSample: start });
        this.#reported = true;
      } else if (key !== this.#last) {
        this.#reported = false;
      }
      this.#last = key;
    }
    return heard;
  }

  #keyOf(block: Float64Array): string | undefined {
    let energy = 0;
    for (const x of block) energy += x * x;
    const n = block.length;
    if (Math.sqrt(energy / n) < MIN_LEVEL) return undefined;
    // Each power scaled so that a pure sine at the frequency scores its share of the energy (0…1).
    const shares = this.#coefficients.map((c) => goertzelPower(block, c) / ((n * energy) / 2));
    const low = strongest(shares.slice(0, 4));
    const high = strongest(shares.slice(4));
    if (!low || !high) return undefined;
    if (low.share + high.share < MIN_TONE_SHARE) return undefined;
    const twist = low.share / high.share;
    if (twist > MAX_TWIST || twist < 1 / MAX_TWIST) return undefined;
    return DTMF_KEYS[low.index]![high.index];
  }
}

/** The group's strongest frequency, when it stands clearly above the rest. */
function strongest(shares: number[]): { index: number; share: number } | undefined {
  let index = 0;
  for (let i = 1; i < shares.length; i++) if (shares[i]! > shares[index]!) index = i;
  const share = shares[index]!;
  const next = Math.max(...shares.filter((_, i) => i !== index));
  return share > 0 && share >= MIN_PEAK_RATIO * next ? { index, share } : undefined;
}
