/**
 * Splitting 10 MB of text into chunks, per strategy (chunk_size 1000, overlap 200), beside a naive
 * baseline run on the same text in the same process: `text.split(/\n\n/)` (one regular-expression
 * pass, the least any splitter does). Acceptance: every strategy splits 10 MB well under a second.
 * `semantic` without an embedder is `sentence`; with one, the embedder's time dominates and is
 * measured with the processing job, not here.
 */
import { splitDocument } from '../src/domains/knowledge/chunking.js';
import type { ChunkingStrategy, ParsedDocument } from '../src/domains/knowledge/types.js';
import { median, table } from './support.js';

/** Prose-like text: sentences of 6–20 words, paragraphs of 1–8 sentences, a fixed seed. */
function prose(bytes: number): string {
  let state = 42;
  const next = () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  const vocabulary =
    'the refund card parcel courier days account order within policy support team we you can will'
      .split(' ')
      .concat(Array.from({ length: 200 }, (_, i) => `term${i}`));
  const parts: string[] = [];
  let length = 0;
  while (length < bytes) {
    const sentences: string[] = [];
    for (let s = 1 + Math.floor(next() * 8); s > 0; s--) {
      const words: string[] = [];
      for (let w = 6 + Math.floor(next() * 15); w > 0; w--)
        words.push(vocabulary[Math.floor(next() * vocabulary.length)]!);
      sentences.push(`${words.join(' ')}.`);
    }
    const paragraph = sentences.join(' ');
    parts.push(paragraph);
    length += paragraph.length + 2;
  }
  return parts.join('\n\n');
}

export async function run(args: string[]): Promise<void> {
  const megabytes = Number(args[0] ?? 10);
  const rounds = Number(args[1] ?? 5);
  const text = prose(megabytes * 1024 * 1024);
  const doc: ParsedDocument = { sections: [{ text }] };
  const strategies: ChunkingStrategy[] = ['recursive', 'fixed', 'sentence', 'semantic'];
  const samples: Record<string, number[]> = Object.fromEntries(
    ['baseline', ...strategies].map((name) => [name, []]),
  );
  const counts: Record<string, number> = {};
  for (let round = 0; round < rounds; round++) {
    let began = performance.now();
    counts.baseline = text.split(/\n\n/).length;
    samples.baseline!.push(performance.now() - began);
    for (const strategy of strategies) {
      began = performance.now();
      const chunks = await splitDocument(doc, { strategy, chunkSize: 1000, chunkOverlap: 200 });
      samples[strategy]!.push(performance.now() - began);
      counts[strategy] = chunks.length;
    }
  }
  const baseline = median(samples.baseline!);
  table(
    Object.entries(samples).map(([name, values]) => ({
      splitter: name === 'baseline' ? 'split(/\\n\\n/) (baseline)' : name,
      pieces: counts[name]!,
      'median ms': Math.round(median(values)),
      'max ms': Math.round(Math.max(...values)),
      'ratio to baseline': Number((median(values) / baseline).toFixed(1)),
    })),
  );
  const slowest = strategies.reduce((a, b) => (median(samples[a]!) >= median(samples[b]!) ? a : b));
  console.log(
    `knowledge-chunking: ${megabytes} MB split in ≤ ${Math.round(median(samples[slowest]!))} ms (slowest: ${slowest}; goal well under 1000 ms), baseline ${Math.round(baseline)} ms — ratio ${(median(samples[slowest]!) / baseline).toFixed(1)}`,
  );
}
