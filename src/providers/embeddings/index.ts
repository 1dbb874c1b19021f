/**
 * The embeddings adapters, by provider id: every key an assistant's embeddings may use (llm_a's, or
 * a `custom` endpoint's; domains/runtime/resolve-embeddings.ts) speaks the OpenAI-compatible API, so
 * one adapter class serves them, each instance naming its provider in the errors it raises.
 */
import { OpenAiEmbeddingsAdapter } from './openai-embeddings.js';
import type { EmbeddingsAdapter } from './types.js';

const adapters = new Map<string, EmbeddingsAdapter>(
  ['llm_a', 'custom'].map((id): [string, EmbeddingsAdapter] => [id, new OpenAiEmbeddingsAdapter(id)]),
);

/**
 * The adapter for `provider` (default llm_a, whose key embeddings usually use). An id without an
 * adapter of its own gets an OpenAI-compatible one named after it: every embeddings service we use
 * speaks that API.
 */
export function embeddingsAdapter(provider = 'llm_a'): EmbeddingsAdapter {
  return adapters.get(provider) ?? new OpenAiEmbeddingsAdapter(provider);
}
