/**
 * The contract of an embeddings service: texts in, one vector per text out, in order. Used by
 * knowledge-base processing (batches of passages) and by retrieval (the caller's words, on the live
 * call's path: keep it fast and give it a time limit). Errors are ProviderErrors: 429 (with
 * `retryAfterSeconds`), 408, 5xx, network and time-outs retryable; other 4xx (a bad key, an unknown
 * model, too long an input) permanent. Aborting `signal` fails the request with a retryable error.
 *
 * One adapter speaks the OpenAI-compatible `POST {base}/embeddings` API (openai-embeddings.ts); its
 * simulator is `src/sim/embeddings.ts`. Every adapter passes `test/support/embeddings-conformance.ts`.
 */

export interface EmbeddingsRequest {
  /** null only for an address that needs no key. */
  apiKey: string | null;
  /** The service's base URL (…/v1). */
  baseUrl: string;
  /** The assistant's `rag_settings.embedding_model`. */
  model: string;
  /** At most MAX_EMBEDDING_INPUTS texts, none empty. */
  inputs: string[];
  signal?: AbortSignal;
  /** Milliseconds before the request fails with a retryable time-out (default 30000). */
  timeoutMs?: number;
}

export interface EmbeddingsResult {
  /** One vector per input, in the inputs' order, each of `dimensions` numbers. */
  vectors: Float32Array[];
  /** The model that answered, as the service names it. */
  model: string;
  dimensions: number;
  /** Tokens the service counted, when it says. */
  promptTokens: number | null;
}

export interface EmbeddingsAdapter {
  /** The provider id it speaks for (in errors and records). */
  readonly provider: string;
  embed(request: EmbeddingsRequest): Promise<EmbeddingsResult>;
}

/** Texts per request: far below the vendors' own limits (2048), so one request stays a few seconds. */
export const MAX_EMBEDDING_INPUTS = 96;
