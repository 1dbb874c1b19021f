/**
 * The Goertzel filter: the power of one frequency in a block of samples, cheaper than a whole FFT when
 * only a few frequencies matter (DTMF keys, an answering machine's beep).
 */

/** 2·cos(2π·hz/rate): the filter's coefficient for `hz` at `sampleRate`. */
export function goertzelCoefficient(hz: number, sampleRate: number): number {
  return 2 * Math.cos((2 * Math.PI * hz) / sampleRate);
}

/** The squared magnitude of the coefficient's frequency over the block. */
export function goertzelPower(block: ArrayLike<number>, coefficient: number): number {
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < block.length; i++) {
    const s = block[i]! + coefficient * s1 - s2;
    s2 = s1;
    s1 = s;
  }
  return s1 * s1 + s2 * s2 - coefficient * s1 * s2;
}
