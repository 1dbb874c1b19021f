/**
 * The fixed log-scale histogram call analytics keep durations and turn latencies in, so percentiles
 * over any range are a sum of small arrays rather than a sort of every value. Buckets grow by 2^(1/4)
 * (about 19 %); their lower bounds are whole numbers, so an integer value (milliseconds, seconds)
 * falls in the same bucket here and in SQL's `width_bucket(value, HISTOGRAM_BOUNDS)`, which the
 * backfill of migration 0015 uses with the same bounds.
 */

/** The largest value told apart; anything at or above it is counted in the last bucket. */
export const HISTOGRAM_CAP = 2 ** 17;

/**
 * Lower bounds of buckets 1…n (bucket 0 holds what is below 1, i.e. 0): round(2^(k/4)) without
 * repeats, from 1 up to HISTOGRAM_CAP.
 */
export const HISTOGRAM_BOUNDS: readonly number[] = (() => {
  const bounds: number[] = [];
  for (let k = 0; 2 ** (k / 4) <= HISTOGRAM_CAP; k++) {
    const bound = Math.round(2 ** (k / 4));
    if (bound !== bounds.at(-1)) bounds.push(bound);
  }
  return bounds;
})();

/** How many buckets a histogram has: one below the first bound, then one per bound. */
export const HISTOGRAM_SIZE = HISTOGRAM_BOUNDS.length + 1;

/** The bucket of a whole, non-negative value (what `width_bucket(value, HISTOGRAM_BOUNDS)` answers). */
export function bucketOf(value: number): number {
  let low = 0;
  let high = HISTOGRAM_BOUNDS.length;
  // The number of bounds at or below `value`.
  while (low < high) {
    const middle = (low + high) >> 1;
    if (HISTOGRAM_BOUNDS[middle]! <= value) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * The value a bucket stands for: the geometric middle of the whole numbers it holds, to 0.1. Bucket 0
 * holds 0 only; the last bucket reads as the cap.
 */
export function bucketValue(bucket: number): number {
  if (bucket <= 0) return 0;
  const low = HISTOGRAM_BOUNDS[bucket - 1]!;
  const next = HISTOGRAM_BOUNDS[bucket];
  if (next === undefined) return low;
  return Math.round(Math.sqrt(low * (next - 1)) * 10) / 10;
}

/**
 * The largest relative error of a percentile read from a histogram against the exact nearest-rank
 * value, for values below the cap: the nearest-rank value lies in the bucket found, and the bucket's
 * value is at most this far from any whole number in it.
 */
export const PERCENTILE_RELATIVE_ERROR: number = (() => {
  let worst = 0;
  for (let bucket = 1; bucket < HISTOGRAM_BOUNDS.length; bucket++) {
    const low = HISTOGRAM_BOUNDS[bucket - 1]!;
    const high = HISTOGRAM_BOUNDS[bucket]! - 1;
    const value = bucketValue(bucket);
    worst = Math.max(worst, (value - low) / low, (high - value) / high);
  }
  return worst;
})();

/** A histogram with every bucket empty. */
export const emptyHistogram = (): number[] => new Array<number>(HISTOGRAM_SIZE).fill(0);

/** Adds `from` into `into`, bucket by bucket. */
export function addHistogram(into: number[], from: readonly number[]): number[] {
  for (let bucket = 0; bucket < into.length; bucket++) into[bucket]! += from[bucket] ?? 0;
  return into;
}

/** How many values a histogram holds. */
export const histogramCount = (counts: readonly number[]): number =>
  counts.reduce((sum, count) => sum + count, 0);

/**
 * The nearest-rank `p`-th percentile (0 < p ≤ 1: the value at rank ⌈p·n⌉ in sorted order), read as
 * the value of its bucket; null when the histogram is empty.
 */
export function percentileOf(counts: readonly number[], p: number): number | null {
  const total = histogramCount(counts);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(p * total));
  let seen = 0;
  for (let bucket = 0; bucket < counts.length; bucket++) {
    seen += counts[bucket]!;
    if (seen >= rank) return bucketValue(bucket);
  }
  return bucketValue(counts.length - 1);
}
