/**
 * The pieces chunking.ts works with: spans (offsets into a section's text, never copies), the
 * boundaries text is cut at, sentences as units, packing units into chunks with whole-unit overlap,
 * and — for the `semantic` strategy — where the meaning shifts between adjacent sentences.
 */

/** [start, end) offsets into a section's text; always trimmed (no leading or trailing space). */
export type Span = [start: number, end: number];

/**
 * The boundaries `recursive` cuts at, coarsest first: a blank line (paragraph), a line end, a
 * sentence end (., !, ?, … followed by space, after any closing quotes or brackets; CJK stops with or
 * without a space), then any space (word). Past the last one, text is cut by characters.
 */
export const LEVELS: RegExp[] = [
  /\n[^\S\n]*\n\s*/g,
  /\n\s*/g,
  /[.!?…]+["'”’»)\]]*\s+|[。！？]+["'”’」』)\]]*\s*/g,
  /\s+/g,
];

/** What `\s` matches, as a character-code test (no regular expression per character). */
export function isSpace(code: number): boolean {
  return (
    code === 32 ||
    (code >= 9 && code <= 13) ||
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/** [start, end) without surrounding white space, or null when nothing else is left. */
export function trimSpan(text: string, start: number, end: number): Span | null {
  let from = start;
  let to = end;
  while (from < to && isSpace(text.charCodeAt(from))) from++;
  while (to > from && isSpace(text.charCodeAt(to - 1))) to--;
  return from < to ? [from, to] : null;
}

/** Paragraphs, then sentences; a unit still longer than a chunk falls back to lines, words, characters. */
const UNIT_LEVELS = [0, 2, 1, 3];

/**
 * The section's sentences, in order: cut at paragraphs, then at sentence ends. A sentence longer
 * than `size` is cut further — at line ends, then words, then characters — into units that fit.
 */
export function sentenceUnits(text: string, size: number): Span[] {
  const units: Span[] = [];
  const visit = (start: number, end: number, step: number) => {
    const separator = LEVELS[UNIT_LEVELS[step] ?? LEVELS.length];
    if (!separator) {
      for (const span of characterSpans(text, start, end, size)) units.push(span);
      return;
    }
    const part = text.slice(start, end);
    let from = 0;
    const piece = (to: number) => {
      const span = trimSpan(text, start + from, start + to);
      from = to;
      if (!span) return;
      // A paragraph is always cut into its sentences; a finer piece is cut only when it is too long.
      if (step > 0 && span[1] - span[0] <= size) units.push(span);
      else visit(span[0], span[1], step + 1);
    };
    for (const match of part.matchAll(separator)) piece(match.index + match[0].length);
    piece(part.length);
  };
  visit(0, text.length, 0);
  return units;
}

/** [start, end) in non-blank pieces of at most `size` characters that never split a surrogate pair. */
export function characterSpans(text: string, start: number, end: number, size: number): Span[] {
  const spans: Span[] = [];
  for (let from = start; from < end; ) {
    let to = Math.min(from + size, end);
    if (to < end && to - from > 1 && isHighSurrogate(text.charCodeAt(to - 1))) to--;
    const span = trimSpan(text, from, to);
    if (span) spans.push(span);
    from = to;
  }
  return spans;
}

export const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/**
 * Units packed in order into chunks of at most `size` characters. A chunk that ends because the next
 * unit would not fit is followed by one that starts with its last whole units (up to `overlap`
 * characters, and only while the new unit still fits); `breaks[i]` starts a fresh chunk before unit
 * `i` without overlap (a change of subject). Units are at most `size` long (sentenceUnits).
 */
export function packUnits(units: Span[], size: number, overlap: number, breaks?: boolean[]): Span[] {
  const out: Span[] = [];
  let first = -1;
  let last = -1;
  for (let i = 0; i < units.length; i++) {
    const [, end] = units[i]!;
    const forced = breaks?.[i] === true;
    if (first >= 0 && !forced && end - units[first]![0] <= size) {
      last = i;
      continue;
    }
    let next = i;
    if (first >= 0) {
      out.push([units[first]![0], units[last]![1]]);
      if (!forced && overlap > 0) {
        const previousEnd = units[last]![1];
        for (let j = last; j > first; j--) {
          const start = units[j]![0];
          if (previousEnd - start > overlap || end - start > size) break;
          next = j;
        }
      }
    }
    first = next;
    last = i;
  }
  if (first >= 0) out.push([units[first]![0], units[last]![1]]);
  return out;
}

/** Sentences sent to `embed` at once (the provider may batch further). */
export const EMBED_BATCH = 64;

/**
 * For each section, where a new chunk starts because the meaning shifts: before unit i when the
 * cosine similarity of units i−1 and i is below the 25th percentile of all adjacent similarities in
 * the document (pairs within a section only: sections split anyway).
 */
export async function semanticBreaks(
  texts: string[],
  units: Span[][],
  embed: (texts: string[]) => Promise<Float32Array[]>,
): Promise<boolean[][]> {
  const strings = units.flatMap((list, s) => list.map(([start, end]) => texts[s]!.slice(start, end)));
  const vectors: Float32Array[] = [];
  if (units.some((list) => list.length > 1)) {
    for (let i = 0; i < strings.length; i += EMBED_BATCH) {
      const batch = strings.slice(i, i + EMBED_BATCH);
      const got = await embed(batch);
      if (got.length !== batch.length) {
        throw new Error(`The embeddings answered ${got.length} vectors for ${batch.length} sentences`);
      }
      vectors.push(...got);
    }
  }
  const similarities: number[][] = [];
  let offset = 0;
  for (const list of units) {
    const row: number[] = [];
    for (let i = 1; i < list.length; i++) row.push(cosine(vectors[offset + i - 1]!, vectors[offset + i]!));
    similarities.push(row);
    offset += list.length;
  }
  const threshold = percentile(similarities.flat(), 0.25);
  return similarities.map((row) => [false, ...row.map((similarity) => similarity < threshold)]);
}

export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let normA = 0;
  let normB = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    dot += a[i]! * b[i]!;
    normA += a[i]! * a[i]!;
    normB += b[i]! * b[i]!;
  }
  return normA > 0 && normB > 0 ? dot / Math.sqrt(normA * normB) : 0;
}

/** The q-quantile with linear interpolation between ranks (NumPy's default); -Infinity for none. */
export function percentile(values: number[], q: number): number {
  if (values.length === 0) return Number.NEGATIVE_INFINITY;
  const sorted = [...values].sort((x, y) => x - y);
  const rank = q * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (rank - low);
}
