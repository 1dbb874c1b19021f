/**
 * Splitting parsed documents into chunks, per strategy: the size bound, the overlap, the boundaries
 * each strategy keeps, sections (never spanned; page and heading carried), positions and tokens,
 * determinism, the semantic split with a small deterministic embedder — and the invariants checked
 * over many random texts. Pure: no database. (Speed is for bench/knowledge-chunking.ts, not here.)
 */
import { describe, expect, it } from 'vitest';
import { splitDocument } from '../src/domains/knowledge/chunking.js';
import { EMBED_BATCH, percentile } from '../src/domains/knowledge/chunking-units.js';
import type { ChunkingStrategy, ParsedDocument, TextChunk } from '../src/domains/knowledge/types.js';
import { estimateTokens } from '../src/domains/knowledge/types.js';

const one = (text: string): ParsedDocument => ({ sections: [{ text }] });
const contents = (chunks: TextChunk[]) => chunks.map((chunk) => chunk.content);
/** n distinct words: w0 w1 w2 … */
const words = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `w${from + i}`).join(' ');

/** The longest suffix of `a` that is a prefix of `b` (what two chunks share). */
function shared(a: string, b: string): string {
  for (let length = Math.min(a.length, b.length); length > 0; length--) {
    if (a.endsWith(b.slice(0, length))) return b.slice(0, length);
  }
  return '';
}

describe('recursive', () => {
  it('keeps paragraphs whole and packs them up to the size', async () => {
    const [p1, p2, p3] = [words(60, 0), words(60, 100), words(60, 200)];
    const chunks = await splitDocument(one(`${p1}\n\n${p2}\n\n\n${p3}`), {
      strategy: 'recursive',
      chunkSize: 700,
      chunkOverlap: 0,
    });
    expect(contents(chunks)).toEqual([`${p1}\n\n${p2}`, p3]);
  });

  it('cuts a long paragraph at sentence ends before words', async () => {
    const sentences = Array.from({ length: 12 }, (_, i) => `${words(8, i * 10)}.`);
    const chunks = await splitDocument(one(sentences.join(' ')), {
      strategy: 'recursive',
      chunkSize: 150,
      chunkOverlap: 0,
    });
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) {
      expect(chunk.content.length).toBeLessThanOrEqual(150);
      expect(chunk.content).toMatch(/^w\d+ .*\.$/);
    }
    expect(contents(chunks).join(' ')).toBe(sentences.join(' '));
  });

  it('overlaps consecutive chunks by about chunkOverlap characters, starting at a word', async () => {
    const text = words(600);
    const chunks = await splitDocument(one(text), {
      strategy: 'recursive',
      chunkSize: 200,
      chunkOverlap: 50,
    });
    expect(chunks.length).toBeGreaterThan(10);
    for (let i = 1; i < chunks.length; i++) {
      const previous = chunks[i - 1]!.content;
      const overlap = shared(previous, chunks[i]!.content);
      expect(overlap.length).toBeGreaterThanOrEqual(50 - 5);
      expect(overlap.length).toBeLessThanOrEqual(50);
      // Whole words: the repeated text starts where a word starts in the previous chunk.
      expect(previous.at(-overlap.length - 1)).toBe(' ');
      expect(chunks[i]!.content.length).toBeLessThanOrEqual(200);
    }
  });

  it('cuts by characters only a word longer than the chunk', async () => {
    const long = 'x'.repeat(250);
    const chunks = await splitDocument(one(`short words ${long} end`), {
      strategy: 'recursive',
      chunkSize: 100,
      chunkOverlap: 10,
    });
    // The long word is cut in pieces of the size; the words around it stay whole (an overlap would
    // start mid-word, so there is none).
    expect(contents(chunks)).toEqual([
      'short words',
      'x'.repeat(100),
      'x'.repeat(100),
      'x'.repeat(50),
      'end',
    ]);
    for (const chunk of chunks) expect(chunk.content.length).toBeLessThanOrEqual(100);
  });
});

describe('fixed', () => {
  it('steps chunkSize − overlap through text without spaces', async () => {
    const text = Array.from({ length: 1000 }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');
    const chunks = await splitDocument(one(text), { strategy: 'fixed', chunkSize: 100, chunkOverlap: 20 });
    const expected: string[] = [];
    for (let start = 0; ; start += 80) {
      expected.push(text.slice(start, start + 100));
      if (start + 100 >= text.length) break;
    }
    expect(contents(chunks)).toEqual(expected);
  });

  it('pulls a window back to a space in its last tenth rather than cut a word', async () => {
    const text = words(400);
    const chunks = await splitDocument(one(text), { strategy: 'fixed', chunkSize: 120, chunkOverlap: 30 });
    for (const chunk of chunks) {
      expect(chunk.content.length).toBeLessThanOrEqual(120);
      if (chunk !== chunks.at(-1)) expect(chunk.content.length).toBeGreaterThan(100);
      // Every chunk is whole words of the text.
      expect(` ${text} `).toContain(` ${chunk.content} `);
    }
    for (let i = 1; i < chunks.length; i++) {
      expect(shared(chunks[i - 1]!.content, chunks[i]!.content).length).toBeGreaterThan(20);
    }
  });
});

describe('sentence', () => {
  const sentences = Array.from({ length: 20 }, (_, i) => `Sentence ${i} says ${words(4 + (i % 5), i * 10)}.`);

  it('packs whole sentences and overlaps by whole trailing sentences', async () => {
    const chunks = await splitDocument(one(sentences.join(' ')), {
      strategy: 'sentence',
      chunkSize: 160,
      chunkOverlap: 60,
    });
    expect(chunks.length).toBeGreaterThan(3);
    const sentencesOf = (content: string) => content.split(/(?<=\.) /);
    for (const chunk of chunks) {
      expect(chunk.content.length).toBeLessThanOrEqual(160);
      for (const sentence of sentencesOf(chunk.content)) expect(sentences).toContain(sentence);
    }
    for (let i = 1; i < chunks.length; i++) {
      const before = sentencesOf(chunks[i - 1]!.content);
      const after = sentencesOf(chunks[i]!.content);
      const repeated = after.filter((sentence) => before.includes(sentence));
      expect(repeated.join(' ').length).toBeLessThanOrEqual(60);
      expect(after.slice(0, repeated.length)).toEqual(repeated);
      expect(before.slice(before.length - repeated.length)).toEqual(repeated);
    }
    // Every sentence is in some chunk, in order.
    expect([...new Set(chunks.flatMap((chunk) => sentencesOf(chunk.content)))]).toEqual(sentences);
  });

  it('splits a sentence longer than the chunk', async () => {
    const long = `${words(80)}.`;
    const chunks = await splitDocument(one(`Short one. ${long} Short two.`), {
      strategy: 'sentence',
      chunkSize: 100,
      chunkOverlap: 0,
    });
    for (const chunk of chunks) expect(chunk.content.length).toBeLessThanOrEqual(100);
    expect(contents(chunks).join(' ')).toBe(`Short one. ${long} Short two.`);
  });
});

/** A deterministic embedder: a bag of words hashed into 32 dimensions (shared words, close vectors). */
function bagOfWords(calls: string[][]) {
  return async (texts: string[]) => {
    calls.push(texts);
    return texts.map((text) => {
      const vector = new Float32Array(32);
      for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
        let hash = 0;
        for (const char of word) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
        vector[hash % 32]! += 1;
      }
      return vector;
    });
  };
}

describe('semantic', () => {
  // Within a subject the sentences share all their words (similarity 1); across, only "days". The
  // one low pair is then the only one below the 25th percentile.
  const refunds = [
    'Refunds reach the card in five days.',
    'In five days refunds reach the card.',
    'The card: refunds reach in five days.',
    'Five days in, refunds reach the card.',
  ];
  const shipping = [
    'Couriers bring parcels within two days.',
    'Within two days couriers bring parcels.',
    'Parcels: couriers bring within two days.',
    'Two days within, couriers bring parcels.',
  ];
  const text = [...refunds, ...shipping].join(' ');

  it('starts a new chunk where the subject changes', async () => {
    const calls: string[][] = [];
    const chunks = await splitDocument(one(text), {
      strategy: 'semantic',
      chunkSize: 1000,
      chunkOverlap: 100,
      embed: bagOfWords(calls),
    });
    expect(contents(chunks)).toEqual([refunds.join(' '), shipping.join(' ')]);
    expect(calls).toEqual([[...refunds, ...shipping]]);
  });

  it('still keeps to the size, and sends sentences in batches', async () => {
    const many = Array.from(
      { length: 150 },
      (_, i) => `${i % 2 ? 'Parcel courier' : 'Refund card'} note ${i}.`,
    );
    const calls: string[][] = [];
    const chunks = await splitDocument(one(many.join(' ')), {
      strategy: 'semantic',
      chunkSize: 120,
      chunkOverlap: 0,
      embed: bagOfWords(calls),
    });
    for (const chunk of chunks) expect(chunk.content.length).toBeLessThanOrEqual(120);
    expect(calls.map((batch) => batch.length)).toEqual([EMBED_BATCH, EMBED_BATCH, 150 - 2 * EMBED_BATCH]);
  });

  it('splits exactly like sentence without an embedder', async () => {
    const options = { chunkSize: 120, chunkOverlap: 50 };
    const semantic = await splitDocument(one(text), { strategy: 'semantic', ...options });
    const sentence = await splitDocument(one(text), { strategy: 'sentence', ...options });
    expect(semantic).toEqual(sentence);
  });

  it('takes the 25th percentile with linear interpolation', () => {
    expect(percentile([4, 1, 3, 2, 5], 0.25)).toBe(2);
    expect(percentile([1, 2], 0.25)).toBe(1.25);
    expect(percentile([], 0.25)).toBe(Number.NEGATIVE_INFINITY);
  });
});

describe('every strategy', () => {
  const strategies: ChunkingStrategy[] = ['recursive', 'fixed', 'sentence', 'semantic'];
  const doc: ParsedDocument = {
    sections: [
      { text: `${words(40)}.`, page: 1 },
      { text: '   \n\n  ', page: 2 },
      { text: `${words(40, 100)}. ${words(30, 200)}.`, page: 3, heading: 'Returns' },
      { text: words(5, 300), heading: 'Contact' },
    ],
  };

  it.each(strategies)(
    '%s: never spans sections, carries page and heading, numbers positions',
    async (strategy) => {
      const chunks = await splitDocument(doc, {
        strategy,
        chunkSize: 150,
        chunkOverlap: 30,
        embed: bagOfWords([]),
      });
      expect(chunks.map((chunk) => chunk.position)).toEqual(chunks.map((_, i) => i));
      for (const chunk of chunks) {
        const section = doc.sections.find((candidate) => candidate.text.includes(chunk.content))!;
        expect(section).toBeDefined();
        expect(chunk.page).toBe(section.page);
        expect(chunk.heading).toBe(section.heading);
        expect(chunk.tokens).toBe(estimateTokens(chunk.content));
        expect(chunk.content.trim()).toBe(chunk.content);
        expect(chunk.content.length).toBeGreaterThan(0);
      }
      expect(new Set(chunks.map((chunk) => chunk.page))).toEqual(new Set([1, 3, undefined]));
      expect(chunks.at(-1)).toMatchObject({ content: words(5, 300), heading: 'Contact' });
      expect('page' in chunks.at(-1)!).toBe(false);
    },
  );

  it.each(strategies)('%s: same input, same chunks', async (strategy) => {
    const options = { strategy, chunkSize: 100, chunkOverlap: 40, embed: bagOfWords([]) };
    expect(await splitDocument(doc, options)).toEqual(await splitDocument(doc, options));
  });

  it('refuses sizes the settings could not hold', async () => {
    await expect(
      splitDocument(one('x'), { strategy: 'recursive', chunkSize: 0, chunkOverlap: 0 }),
    ).rejects.toThrow(RangeError);
    await expect(
      splitDocument(one('x'), { strategy: 'fixed', chunkSize: 100, chunkOverlap: 100 }),
    ).rejects.toThrow(/chunkOverlap/);
  });

  it('gives no chunks for a document without text', async () => {
    expect(
      await splitDocument(
        { sections: [{ text: ' \n ' }] },
        { strategy: 'sentence', chunkSize: 100, chunkOverlap: 0 },
      ),
    ).toEqual([]);
  });
});

/** A small seeded generator (mulberry32): the same texts on every run. */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (low: number, high: number) => low + Math.floor(next() * (high - low + 1));
  return { next, int, pick: <T>(items: T[]) => items[int(0, items.length - 1)]! };
}

/** Random prose: paragraphs, sentences, line breaks, stray spaces, now and then a word longer than a chunk. */
function randomDocument(seed: number): ParsedDocument {
  const rng = random(seed);
  let counter = 0;
  const word = () => {
    counter++;
    if (rng.next() < 0.02) {
      // Random letters (and an emoji: a surrogate pair) so a long word is unique in the text.
      const letters = Array.from({ length: rng.int(30, 400) }, () =>
        String.fromCharCode(97 + rng.int(0, 25)),
      );
      letters.splice(rng.int(0, letters.length), 0, '😀');
      return `${letters.join('')}${counter}`;
    }
    return `w${counter}${rng.pick(['', '', 'x', 'yz'])}${rng.pick(['', '', '', ',', '.', '!', '?'])}`;
  };
  const sentence = () =>
    Array.from({ length: rng.int(1, 14) }, word).join(rng.pick([' ', ' ', ' ', '  ', '\u00a0']));
  const paragraph = () =>
    Array.from({ length: rng.int(1, 6) }, sentence).join(rng.pick(['. ', '? ', '.\n', ' ']));
  const section = () =>
    Array.from({ length: rng.int(1, 6) }, paragraph).join(rng.pick(['\n\n', '\n \n', '\n\n\n']));
  return {
    sections: Array.from({ length: rng.int(1, 3) }, (_, i) => ({ text: section(), page: i + 1 })),
  };
}

const nonSpace = /\S/;
const wordAround = (text: string, at: number) => {
  let start = at;
  let end = at;
  while (start > 0 && nonSpace.test(text[start - 1]!)) start--;
  while (end < text.length && nonSpace.test(text[end]!)) end++;
  return end - start;
};

describe('invariants over random texts', () => {
  const strategies: ChunkingStrategy[] = ['recursive', 'fixed', 'sentence', 'semantic'];

  it.each(strategies)('%s: within size, never blank, covering the text in order', async (strategy) => {
    for (let seed = 1; seed <= 40; seed++) {
      const rng = random(seed * 7919);
      const chunkSize = rng.int(20, 400);
      const chunkOverlap = rng.int(0, chunkSize - 1);
      const doc = randomDocument(seed);
      const options = { strategy, chunkSize, chunkOverlap, embed: bagOfWords([]) };
      const chunks = await splitDocument(doc, options);
      const where = `seed ${seed}, size ${chunkSize}, overlap ${chunkOverlap}`;
      expect(await splitDocument(doc, options), where).toEqual(chunks);
      expect(
        chunks.map((chunk) => chunk.position),
        where,
      ).toEqual(chunks.map((_, i) => i));

      for (const section of doc.sections) {
        const text = section.text;
        const covered = new Uint8Array(text.length);
        let from = 0;
        for (const chunk of chunks.filter((candidate) => candidate.page === section.page)) {
          const { content } = chunk;
          expect(content.length, where).toBeLessThanOrEqual(chunkSize);
          expect(content.trim(), where).toBe(content);
          expect(content.length, where).toBeGreaterThan(0);
          expect(chunk.tokens).toBe(estimateTokens(content));
          const at = text.indexOf(content, from);
          expect(
            at,
            `${where}: ${JSON.stringify(content)} is the section's text, in order`,
          ).toBeGreaterThanOrEqual(0);
          covered.fill(1, at, at + content.length);
          from = at;
          // No surrogate pair is cut.
          expect(/^[\udc00-\udfff]|[\ud800-\udbff]$/.test(content), where).toBe(false);
          if (strategy !== 'fixed') {
            // A chunk starts and ends at word boundaries, unless the word there is longer than a chunk.
            const end = at + content.length;
            if (at > 0 && nonSpace.test(text[at - 1]!))
              expect(wordAround(text, at), where).toBeGreaterThan(chunkSize);
            if (end < text.length && nonSpace.test(text[end]!)) {
              expect(wordAround(text, end - 1), where).toBeGreaterThan(chunkSize);
            }
          }
        }
        for (let i = 0; i < text.length; i++) {
          if (nonSpace.test(text[i]!) && !covered[i])
            throw new Error(`${where}: character ${i} is in no chunk`);
        }
      }
    }
  });
});
