/**
 * The embeddings simulator (src/sim/embeddings.ts) for knowledge tests, started in a `beforeAll` of
 * the file that calls `embeddingsRig()` (before its platform, so the platform can be given its URL),
 * stopped after; with the real adapter that speaks to it and an embeddings choice pointing at it.
 */
import { afterAll, beforeAll } from 'vitest';
import type { EmbeddingsChoice } from '../../src/domains/knowledge/types.js';
import { embeddingsAdapter } from '../../src/providers/embeddings/index.js';
import { EmbeddingsSimulator } from '../../src/sim/embeddings.js';

export function embeddingsRig() {
  const simulator = new EmbeddingsSimulator();
  beforeAll(async () => {
    await simulator.start();
  });
  afterAll(() => simulator.stop());
  return {
    simulator,
    url: () => simulator.url,
    adapter: () => embeddingsAdapter(),
    choice: (): EmbeddingsChoice => ({
      baseUrl: simulator.url,
      apiKey: 'sk-test-embeddings',
      model: 'text-embedding-3-small',
      source: 'assistant',
    }),
    /** The next `count` requests answer 500. */
    failNext: (count: number) => simulator.failNext(count, { error: { status: 500, message: 'boom' } }),
  };
}
