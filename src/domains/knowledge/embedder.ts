/**
 * Texts to vectors for knowledge bases, through an embeddings adapter and an assistant's choice
 * (domains/runtime/resolve-embeddings.ts). Texts go in batches of MAX_EMBEDDING_INPUTS, one batch
 * after another: simple, gentle on the vendor's rate limits, and a document of a few hundred chunks
 * is still a handful of requests; a failed batch fails the whole call (processing retries the job).
 * Each text is trimmed and cut to MAX_EMBEDDING_CHARS, a safe distance below the models' 8,191-token
 * limit (8,000 tokens at four characters each), so a long passage is embedded by its beginning
 * rather than refused. Empty texts are the caller's to leave out: the vendors refuse them.
 */

import { type EmbeddingsAdapter, MAX_EMBEDDING_INPUTS } from '../../providers/embeddings/types.js';
import { ProviderError } from '../../providers/errors.js';
import type { EmbeddingsChoice } from './types.js';

/** About 8,000 tokens at four characters a token (estimateTokens). */
export const MAX_EMBEDDING_CHARS = 32_000;

export interface EmbedOptions {
  signal?: AbortSignal;
  /** Per request (each batch), milliseconds; the adapter's default otherwise. */
  timeoutMs?: number;
  /** Texts per request, at most MAX_EMBEDDING_INPUTS (the default). */
  batchSize?: number;
}

export interface Embedded {
  /** One per text, in the texts' order. */
  vectors: Float32Array[];
  dimensions: number;
  /** The model as the service named it (the choice's when it did not say). */
  model: string;
}

/** The text as it is sent: trimmed, and cut to MAX_EMBEDDING_CHARS. */
export function embeddingInput(text: string): string {
  return text.trim().slice(0, MAX_EMBEDDING_CHARS);
}

export async function embedTexts(
  adapter: EmbeddingsAdapter,
  choice: EmbeddingsChoice,
  texts: string[],
  options: EmbedOptions = {},
): Promise<Embedded> {
  const inputs = texts.map(embeddingInput);
  const empty = inputs.indexOf('');
  if (empty >= 0) throw new RangeError(`text ${empty} is empty: leave empty texts out before embedding`);
  const batchSize = Math.min(
    Math.max(1, Math.floor(options.batchSize ?? MAX_EMBEDDING_INPUTS)),
    MAX_EMBEDDING_INPUTS,
  );
  const vectors: Float32Array[] = [];
  let dimensions = 0;
  let model = choice.model;
  for (let start = 0; start < inputs.length; start += batchSize) {
    const result = await adapter.embed({
      apiKey: choice.apiKey,
      baseUrl: choice.baseUrl,
      model: choice.model,
      inputs: inputs.slice(start, start + batchSize),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    });
    // Every vector of one call must be comparable: a service that changed dimensions between batches
    // (a model swapped behind the same name) would poison the search.
    if (start > 0 && result.dimensions !== dimensions) {
      throw new ProviderError(
        `${adapter.provider} answered ${result.dimensions} dimensions after ${dimensions} in one run`,
        { provider: adapter.provider, retryable: false, code: 'malformed_answer' },
      );
    }
    dimensions = result.dimensions;
    if (result.model) model = result.model;
    vectors.push(...result.vectors);
  }
  return { vectors, dimensions, model };
}
