/**
 * Sample-rate conversion of 16-bit mono audio, streamed: chunks go in as they arrive and the output
 * is the same as if the whole signal had been converted at once (the filter's history carries over
 * between chunks). Used where a format must change exactly once on the live path — a voice that only
 * speaks 24 kHz PCM for an 8 kHz carrier, a 16 kHz carrier's audio for the 8 kHz VAD.
 *
 * The filter is a windowed sinc (Blackman window, 8 zero crossings each side of the tap at the
 * lower rate) with its cutoff just under the lower rate's Nyquist frequency, evaluated at each output
 * sample's exact position: no aliasing when going down, no images when going up, and a constant
 * delay of half the filter, which the stream keeps rather than trims (it is under 2 ms).
 */

const ZERO_CROSSINGS = 8;
/** Kernels kept per distinct fractional position (rational ratios repeat a handful of them). */
const MAX_TABLES = 64;
/** Cutoff as a fraction of the lower rate's Nyquist frequency: a little room for the transition band. */
const ROLLOFF = 0.9;

export class Resampler {
  readonly #step: number;
  readonly #scale: number;
  readonly #halfWidth: number;
  readonly #cutoff: number;
  /** Input samples kept from earlier chunks (the filter reaches back `halfWidth` of them). */
  #history: Float32Array = new Float32Array(0);
  /** The stream position (in input samples) of `#history[0]`. */
  #historyStart = 0;
  /** The position (in input samples) of the next output sample. */
  #position = 0;
  /** The kernel's taps for each fractional position met so far. */
  readonly #tables = new Map<number, Float32Array>();

  constructor(
    readonly fromRate: number,
    readonly toRate: number,
  ) {
    if (!(fromRate > 0 && toRate > 0)) throw new RangeError('sample rates must be positive');
    this.#step = fromRate / toRate;
    // Going down, the filter is stretched over more input samples so it cuts at the output's Nyquist.
    this.#scale = Math.min(1, toRate / fromRate);
    this.#cutoff = ROLLOFF * this.#scale;
    this.#halfWidth = Math.ceil(ZERO_CROSSINGS / this.#scale);
  }

  /** Converts the next chunk; returns the output samples it completes (possibly none). */
  push(samples: Int16Array): Int16Array {
    if (this.fromRate === this.toRate) return samples;
    const input = new Float32Array(this.#history.length + samples.length);
    input.set(this.#history);
    for (let i = 0; i < samples.length; i++) input[this.#history.length + i] = samples[i]!;
    const inputEnd = this.#historyStart + input.length;
    const out: number[] = [];
    // An output sample needs the input up to halfWidth past its position.
    while (this.#position + this.#halfWidth < inputEnd) {
      out.push(this.#sample(input, this.#position));
      this.#position += this.#step;
    }
    const keepFrom = Math.max(this.#historyStart, Math.floor(this.#position) - this.#halfWidth);
    this.#history = input.slice(keepFrom - this.#historyStart);
    this.#historyStart = keepFrom;
    return Int16Array.from(out);
  }

  #sample(input: Float32Array, position: number): number {
    const center = Math.floor(position);
    const taps = this.#taps(position - center);
    const first = center - this.#halfWidth + 1 - this.#historyStart;
    let sum = 0;
    for (let t = 0; t < taps.length; t++) {
      const index = first + t;
      if (index >= 0 && index < input.length) sum += input[index]! * taps[t]!;
    }
    const value = Math.round(sum);
    return Math.min(32767, Math.max(-32768, value));
  }

  #taps(fraction: number): Float32Array {
    const key = Math.round(fraction * 1e6);
    let taps = this.#tables.get(key);
    if (!taps) {
      taps = new Float32Array(2 * this.#halfWidth);
      for (let t = 0; t < taps.length; t++) taps[t] = this.#kernel(t - this.#halfWidth + 1 - fraction);
      if (this.#tables.size < MAX_TABLES) this.#tables.set(key, taps);
    }
    return taps;
  }

  /** The low-pass kernel at `x` input samples from the output sample's position. */
  #kernel(x: number): number {
    const t = x * this.#cutoff;
    const sinc = t === 0 ? 1 : Math.sin(Math.PI * t) / (Math.PI * t);
    const w = 0.5 + (0.5 * x) / this.#halfWidth; // 0…1 across the filter
    const window = 0.42 - 0.5 * Math.cos(2 * Math.PI * w) + 0.08 * Math.cos(4 * Math.PI * w);
    return this.#cutoff * sinc * window;
  }
}

/** Converts a whole signal at once (tests, fixtures, fixed clips). */
export function resample(samples: Int16Array, fromRate: number, toRate: number): Int16Array {
  const resampler = new Resampler(fromRate, toRate);
  const head = resampler.push(samples);
  // Flush the filter's reach with silence so the tail is not lost.
  const tail = resampler.push(new Int16Array(Math.ceil(ZERO_CROSSINGS / Math.min(1, toRate / fromRate)) + 1));
  const wanted = Math.round((samples.length * toRate) / fromRate);
  const out = new Int16Array(wanted);
  out.set(head.subarray(0, wanted));
  if (head.length < wanted) out.set(tail.subarray(0, wanted - head.length), head.length);
  return out;
}
