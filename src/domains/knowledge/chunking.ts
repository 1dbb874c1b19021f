/**
 * A parsed document split into the chunks retrieval returns, by the assistant's chunking strategy
 * (rag_settings.chunking_strategy, chunk_size, chunk_overlap):
 * - `recursive`: split at paragraphs, then lines, sentence ends, words and — only for a word longer
 *   than a chunk — characters, packing neighbouring pieces of one level up to the size, so a chunk
 *   breaks at the coarsest boundary it can; each chunk repeats about `chunkOverlap` characters of the
 *   one before, starting at a word.
 * - `fixed`: windows of `chunkSize` stepping `chunkSize − chunkOverlap`, pulled back to a space in
 *   their last tenth so a word is not cut.
 * - `sentence`: whole sentences packed up to the size, overlapping by whole trailing sentences.
 * - `semantic`: as `sentence`, but a chunk also ends where adjacent sentences' embeddings are least
 *   alike (below the 25th percentile of all adjacent similarities) — see chunking-units.ts.
 *
 * Every chunk is at most `chunkSize` characters, never blank, and within one section (a page or a
 * heading), whose `page`/`heading` it carries. Pure and deterministic: the processing job re-splits a
 * document after a crash and relies on getting the same chunks. Linear in the text: pieces are
 * offsets into the section's text, and a chunk's string is sliced once.
 */
import {
  characterSpans,
  isHighSurrogate,
  isSpace,
  LEVELS,
  packUnits,
  type Span,
  semanticBreaks,
  sentenceUnits,
  trimSpan,
} from './chunking-units.js';
import { type ChunkingOptions, estimateTokens, type ParsedDocument, type TextChunk } from './types.js';

export async function splitDocument(doc: ParsedDocument, options: ChunkingOptions): Promise<TextChunk[]> {
  const { chunkSize: size, chunkOverlap: overlap } = options;
  if (!Number.isInteger(size) || size < 1)
    throw new RangeError(`chunkSize must be a positive integer, got ${size}`);
  if (!Number.isInteger(overlap) || overlap < 0 || overlap >= size) {
    throw new RangeError(`chunkOverlap must be an integer from 0 to chunkSize - 1, got ${overlap}`);
  }
  const texts = doc.sections.map((section) => section.text);
  let spans: Span[][];
  switch (options.strategy) {
    case 'fixed':
      spans = texts.map((text) => fixedSpans(text, size, overlap));
      break;
    case 'sentence':
    case 'semantic': {
      const units = texts.map((text) => sentenceUnits(text, size));
      const breaks =
        options.strategy === 'semantic' && options.embed
          ? await semanticBreaks(texts, units, options.embed)
          : units.map(() => undefined);
      spans = units.map((list, i) => packUnits(list, size, overlap, breaks[i]));
      break;
    }
    default:
      spans = texts.map((text) => recursiveSpans(text, size, overlap));
  }
  const chunks: TextChunk[] = [];
  doc.sections.forEach((section, i) => {
    for (const [start, end] of spans[i]!) {
      const content = section.text.slice(start, end);
      const chunk: TextChunk = { position: chunks.length, content, tokens: estimateTokens(content) };
      if (section.page !== undefined) chunk.page = section.page;
      if (section.heading !== undefined) chunk.heading = section.heading;
      chunks.push(chunk);
    }
  });
  return chunks;
}

/** `recursive`: see the module comment. Returns trimmed spans of `text`, in order. */
export function recursiveSpans(text: string, size: number, overlap: number): Span[] {
  const out: Span[] = [];

  /**
   * Where a chunk whose new text is [start, end) begins once it repeats the previous chunk's end: a
   * word start within `overlap` characters of that end, and not before `earliest` (so the chunk
   * stays within `size`; -Infinity asks for the overlap the chunk would have if there were room).
   */
  const chunkStart = (start: number, earliest: number): number => {
    const previous = out[out.length - 1];
    if (!previous || overlap === 0) return start;
    const [from, to] = previous;
    let i = Math.max(from, to - overlap, earliest);
    // Mid-word: move on to the next word's start.
    if (i > from && !isSpace(text.charCodeAt(i - 1))) while (i < to && !isSpace(text.charCodeAt(i))) i++;
    while (i < to && isSpace(text.charCodeAt(i))) i++;
    return i < to ? i : start;
  };

  const split = (start: number, end: number, level: number) => {
    let groupStart = -1;
    let groupEnd = -1;
    let groupChunkStart = -1;
    const flush = () => {
      if (groupStart >= 0) out.push([chunkStart(groupStart, groupEnd - size), groupEnd]);
      groupStart = -1;
    };
    for (const piece of cut(text, start, end, level, size)) {
      const [pieceStart, pieceEnd] = piece;
      if (pieceEnd - pieceStart > size) {
        flush();
        split(pieceStart, pieceEnd, level + 1);
      } else if (groupStart >= 0 && pieceEnd - groupChunkStart <= size) {
        groupEnd = pieceEnd;
      } else {
        flush();
        groupStart = pieceStart;
        groupEnd = pieceEnd;
        // The group grows only while the full overlap still fits; a piece alone gives up overlap instead.
        groupChunkStart = chunkStart(pieceStart, Number.NEGATIVE_INFINITY);
      }
    }
    flush();
  };

  const whole = trimSpan(text, 0, text.length);
  if (whole) split(whole[0], whole[1], 0);
  return out;
}

/**
 * The trimmed, non-blank pieces of [start, end) cut at `level` (each piece ends with its separator,
 * trimmed away); past the last level, pieces of `size` characters that never split a surrogate pair.
 */
function cut(text: string, start: number, end: number, level: number, size: number): Span[] {
  const pieces: Span[] = [];
  const push = (from: number, to: number) => {
    const piece = trimSpan(text, from, to);
    if (piece) pieces.push(piece);
  };
  const separator = LEVELS[level];
  if (!separator) return characterSpans(text, start, end, size);
  // A slice, so the search cannot run on past `end` (that would be quadratic over many pieces).
  const part = text.slice(start, end);
  let from = 0;
  for (const match of part.matchAll(separator)) {
    const to = match.index + match[0].length;
    push(start + from, start + to);
    from = to;
  }
  push(start + from, end);
  return pieces;
}

/** `fixed`: see the module comment. */
export function fixedSpans(text: string, size: number, overlap: number): Span[] {
  const out: Span[] = [];
  const n = text.length;
  const tenth = Math.max(1, Math.floor(size / 10));
  let start = skipSpaces(text, 0, n);
  while (start < n) {
    let end = Math.min(start + size, n);
    if (end < n && !isSpace(text.charCodeAt(end)) && !isSpace(text.charCodeAt(end - 1))) {
      // The window would cut a word: end at the last space in its last tenth, when there is one.
      let i = end - 1;
      while (i > end - tenth && i > start && !isSpace(text.charCodeAt(i))) i--;
      if (i > end - tenth && i > start) end = i;
      else if (isHighSurrogate(text.charCodeAt(end - 1)) && end - start > 1) end--;
    }
    const chunk = trimSpan(text, start, end);
    if (chunk) out.push(chunk);
    if (end >= n) break;
    let next = end - overlap;
    if (next <= start) next = Math.min(end, start + (size - overlap));
    // Start the repeated text at a word rather than inside one, when a word starts in the next tenth.
    if (next > 0 && !isSpace(text.charCodeAt(next - 1))) {
      let i = next;
      while (i < end && i < next + tenth && !isSpace(text.charCodeAt(i))) i++;
      if (i < end && i < next + tenth) next = i;
      else if (next < end && isLowSurrogate(text.charCodeAt(next))) next++;
    }
    start = skipSpaces(text, next, n);
  }
  return out;
}

function skipSpaces(text: string, from: number, to: number): number {
  let i = from;
  while (i < to && isSpace(text.charCodeAt(i))) i++;
  return i;
}

const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;
