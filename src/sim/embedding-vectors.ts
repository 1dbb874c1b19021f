/**
 * The embeddings simulator's vectors: deterministic, fast, and meaningful enough for retrieval tests —
 * texts that share words are close, unrelated texts are near-orthogonal. Feature hashing: each word is
 * lower-cased, stop words dropped, lightly stemmed ("refunds"→"refund", "returned"→"return"), and its
 * stem hashed (FNV-1a, then a mixing step) to one dimension and a sign; the stem's character trigrams
 * add a smaller weight the same way, so near-spellings ("warranty", "warrenty") are close too. The
 * vector is L2-normalised, as the vendors' are, so a dot product is the cosine.
 *
 * A text with no letters or digits gets a fixed unit vector, not a zero one: a real service never
 * answers zeros, and a zero vector makes cosine 0/0 (pgvector answers NaN), which would break the
 * ordering of a search. A text of stop words only keeps its stop words, so "Who are you?" still has a
 * vector of its own.
 *
 * Used by src/sim/embeddings.ts, tests, and benchmarks that need vectors without a network.
 */

/** Each model's native dimensions, as OpenAI documents them; any other model name gets 1536. */
export const SIM_EMBEDDING_DIMENSIONS: Record<string, number> = {
  'text-embedding-3-small': 1536,
  'text-embedding-3-large': 3072,
  'text-embedding-ada-002': 1536,
};

const DEFAULT_DIMENSIONS = 1536;

/** The dimensions an answer for `model` has: `requested` when given (the `dimensions` parameter). */
export function dimensionsOf(model: string, requested?: number): number {
  return requested ?? SIM_EMBEDDING_DIMENSIONS[model] ?? DEFAULT_DIMENSIONS;
}

const STOP_WORDS = new Set(
  (
    'a an and are as at be been but by can could did do does for from had has have how i if in into is ' +
    'it its me my no not of on or our so than that the their them then there these they this to us was ' +
    'we were what when where which who why will with would you your'
  ).split(' '),
);

/**
 * A word's weight; its trigrams share TRIGRAM_WEIGHT (as a vector norm) between them, so long words do
 * not dominate and a one-letter typo in an 8-letter word still gives a cosine near 0.25.
 */
const WORD_WEIGHT = 1;
const TRIGRAM_WEIGHT = 0.8;
/** Seeds that keep words, trigrams and the empty-text marker in different hash spaces. */
const WORD_SEED = 0x811c9dc5;
const TRIGRAM_SEED = 0x050c5d1f;
/** Boundary marks around a stem, so a trigram at a word's start differs from one in its middle. */
const START = 0x02;
const END = 0x03;

/** Letters, digits and combining marks beyond ASCII (ASCII is tested by code, the fast path). */
const NON_ASCII_WORD = /[\p{L}\p{N}\p{M}]/u;

/**
 * A deterministic unit vector of `dimensions` numbers for `text`. The same text always gives the
 * same vector; texts sharing (stems of) words have a higher cosine than unrelated ones.
 */
export function simulatedEmbedding(text: string, dimensions: number): Float32Array {
  if (!Number.isInteger(dimensions) || dimensions < 1) {
    throw new RangeError(`dimensions must be a positive integer, got ${dimensions}`);
  }
  const vector = new Float32Array(dimensions);
  const words = wordsOf(text.toLowerCase());
  if (words.length === 0) {
    vector[index(fnvString(WORD_SEED, '\u0000empty'), dimensions)] = 1;
    return vector;
  }
  const features = words.map(featuresOf);
  const content = features.some((f) => !f.stopWord);
  for (const f of features) {
    if (content && f.stopWord) continue;
    let weight = WORD_WEIGHT;
    for (const h of f.hashes) {
      vector[index(h, dimensions)]! += h < 0 ? -weight : weight;
      weight = f.trigramWeight;
    }
  }
  normalise(vector);
  return vector;
}

/** A word's hashed features: its stem's hash, then its trigrams' (the sign bit is the sign). */
interface WordFeatures {
  stopWord: boolean;
  hashes: Int32Array;
  trigramWeight: number;
}

/**
 * Words seen before, so a text costs a lookup per word rather than a stemming and a dozen hashes.
 * Bounded: emptied when full (determinism does not depend on it, only speed).
 */
const FEATURES = new Map<string, WordFeatures>();
const MAX_CACHED_WORDS = 50_000;

function featuresOf(word: string): WordFeatures {
  let f = FEATURES.get(word);
  if (f !== undefined) return f;
  const s = stem(word);
  const n = s.length;
  const hashes = new Int32Array(n + 1);
  hashes[0] = mix(fnvString(WORD_SEED, s));
  // The trigrams of "^stem$": as many as the stem has characters.
  let a = START;
  let b = s.charCodeAt(0);
  for (let i = 1; i <= n; i++) {
    const c = i < n ? s.charCodeAt(i) : END;
    let t = TRIGRAM_SEED;
    t = Math.imul(t ^ a, 0x01000193);
    t = Math.imul(t ^ b, 0x01000193);
    hashes[i] = mix(Math.imul(t ^ c, 0x01000193));
    a = b;
    b = c;
  }
  f = {
    stopWord: STOP_WORDS.has(word),
    hashes,
    trigramWeight: TRIGRAM_WEIGHT / Math.sqrt(n),
  };
  if (FEATURES.size >= MAX_CACHED_WORDS) FEATURES.clear();
  FEATURES.set(word, f);
  return f;
}

/** The runs of letters and digits of a lower-cased text. */
function wordsOf(text: string): string[] {
  const words: string[] = [];
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    if (i < text.length && isWordCode(text, i)) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      words.push(text.slice(start, i));
      start = -1;
    }
  }
  return words;
}

function isWordCode(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  if (c < 128) return (c >= 97 && c <= 122) || (c >= 48 && c <= 57);
  // A surrogate pair is tested whole at its first half; its second half goes with it.
  if (c >= 0xdc00 && c <= 0xdfff) return i > 0 && isWordCode(text, i - 1);
  return NON_ASCII_WORD.test(String.fromCodePoint(text.codePointAt(i) ?? c));
}

/** A hash's dimension from its 31 low bits (its sign bit is the feature's sign): small-integer math. */
function index(h: number, dimensions: number): number {
  return (h & 0x7fffffff) % dimensions;
}

function normalise(vector: Float32Array): void {
  let sum = 0;
  for (const x of vector) sum += x * x;
  if (sum === 0) return;
  const scale = 1 / Math.sqrt(sum);
  for (let i = 0; i < vector.length; i++) vector[i]! *= scale;
}

/** FNV-1a over UTF-16 code units (words are short; code units hash as well as bytes here). */
function fnvString(seed: number, s: string): number {
  let h = seed;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h;
}

/** murmur3's finaliser: FNV's low bits are poorly mixed, and both the index and the sign use them. */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/**
 * A light stemmer, English-minded, for lower-case words: plurals (-ies, -es after s/x/z/ch/sh, -s),
 * -ing, -ed, -ly, a doubled final consonant left behind ("stopped"→"stop"), and a final silent e
 * ("price", "priced", "pricing" → "pric"). It only needs to map a word's forms to one stem
 * consistently; the stems need not be words.
 */
export function stem(word: string): string {
  let w = word;
  const n = w.length;
  if (n > 4 && w.endsWith('ies')) w = `${w.slice(0, -3)}y`;
  else if (n > 4 && w.endsWith('sses')) w = w.slice(0, -2);
  else if (n > 3 && w.endsWith('es') && sibilantBefore(w, n - 2)) w = w.slice(0, -2);
  else if (n > 3 && w.endsWith('s')) {
    const before = w.charCodeAt(n - 2);
    // "status", "pass", "analysis" are no plurals.
    if (before !== 0x73 && before !== 0x75 && before !== 0x69) w = w.slice(0, -1);
  }
  const m = w.length;
  if (m > 5 && w.endsWith('ing')) w = undouble(w.slice(0, -3));
  else if (m > 4 && w.endsWith('ed') && !w.endsWith('eed')) w = undouble(w.slice(0, -2));
  else if (m > 4 && w.endsWith('ly')) w = w.slice(0, -2);
  if (w.length > 3 && w.endsWith('e')) w = w.slice(0, -1);
  return w;
}

/** Whether the word ends in s, x, z, ch or sh just before `at` ("boxes", "watches"). */
function sibilantBefore(w: string, at: number): boolean {
  const c = w.charCodeAt(at - 1);
  if (c === 0x73 || c === 0x78 || c === 0x7a) return true;
  return c === 0x68 && (w.charCodeAt(at - 2) === 0x63 || w.charCodeAt(at - 2) === 0x73);
}

/** "stopp" → "stop", "runn" → "run"; "ll", "ss", "zz" stay ("call", "pass"). */
function undouble(w: string): string {
  const n = w.length;
  if (n < 3) return w;
  const last = w.charAt(n - 1);
  if (last === w.charAt(n - 2) && 'bdfgmnprt'.includes(last)) return w.slice(0, -1);
  return w;
}
