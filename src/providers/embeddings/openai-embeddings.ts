/**
 * The OpenAI-compatible embeddings API: one `POST {baseUrl}/embeddings` per batch of texts. Vectors
 * are asked for as base64 (little-endian float32: a third of the JSON's size, and decoded without
 * parsing thousands of numbers) and given back as Float32Arrays in the inputs' order, whatever order
 * the service listed them in. An answer that does not fit the request (a vector missing or repeated,
 * an index out of range, dimensions that differ) is a permanent ProviderError: asking again would get
 * the same. Statuses follow providers/errors.ts: 408, 429 (with its retry-after) and 5xx retryable,
 * other 4xx permanent; network failures, time-outs and an aborted `signal` retryable.
 */
import { ProviderError } from '../errors.js';
import { quotaExhausted, refusalError } from '../llm/http-answer.js';
import type { EmbeddingsAdapter, EmbeddingsRequest, EmbeddingsResult } from './types.js';

const DEFAULT_TIMEOUT_MS = 30_000;

export class OpenAiEmbeddingsAdapter implements EmbeddingsAdapter {
  /** `provider` names the service in errors (llm_a, custom…). */
  constructor(readonly provider: string) {}

  async embed(request: EmbeddingsRequest): Promise<EmbeddingsResult> {
    const http = new AbortController();
    const abort = () => http.abort();
    request.signal?.addEventListener('abort', abort, { once: true });
    if (request.signal?.aborted) http.abort();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      http.abort();
    }, request.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    try {
      let response: Response;
      let text: string;
      try {
        response = await fetch(`${request.baseUrl.replace(/\/+$/, '')}/embeddings`, {
          method: 'POST',
          headers: headers(request.apiKey),
          body: JSON.stringify({ model: request.model, input: request.inputs, encoding_format: 'base64' }),
          signal: http.signal,
        });
        if (!response.ok) throw await this.#refusal(response, request.apiKey);
        text = await response.text();
      } catch (error) {
        if (error instanceof ProviderError) throw error;
        throw new ProviderError(
          timedOut
            ? `${this.provider} did not answer in time`
            : request.signal?.aborted
              ? `${this.provider}: the request was aborted`
              : `${this.provider} could not be reached`,
          {
            provider: this.provider,
            retryable: true,
            code: timedOut ? 'timeout' : request.signal?.aborted ? 'aborted' : undefined,
            cause: error,
          },
        );
      }
      return this.#read(text, request.inputs.length);
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', abort);
    }
  }

  /** The answer as the contract's result, or a permanent error when it does not fit the request. */
  #read(text: string, count: number): EmbeddingsResult {
    let body: { data?: unknown; model?: unknown; usage?: { prompt_tokens?: unknown } };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      throw this.#malformed('the answer was no JSON');
    }
    if (!Array.isArray(body?.data)) throw this.#malformed('the answer had no data list');
    if (body.data.length !== count) {
      throw this.#malformed(`${body.data.length} vectors for ${count} inputs`);
    }
    const vectors = new Array<Float32Array | undefined>(count);
    let dimensions = -1;
    for (const item of body.data as Array<{ index?: unknown; embedding?: unknown }>) {
      const index = item?.index;
      if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= count) {
        throw this.#malformed(`an item's index (${String(index)}) is out of range`);
      }
      if (vectors[index as number]) throw this.#malformed(`index ${index} answered twice`);
      const vector = decode(item.embedding);
      if (!vector || vector.length === 0) throw this.#malformed(`the vector at index ${index} is unreadable`);
      if (dimensions >= 0 && vector.length !== dimensions) {
        throw this.#malformed(`vectors of ${dimensions} and ${vector.length} dimensions`);
      }
      dimensions = vector.length;
      vectors[index as number] = vector;
    }
    const tokens = body.usage?.prompt_tokens;
    return {
      vectors: vectors as Float32Array[],
      model: typeof body.model === 'string' ? body.model : '',
      dimensions: Math.max(dimensions, 0),
      promptTokens: typeof tokens === 'number' && Number.isFinite(tokens) ? tokens : null,
    };
  }

  #malformed(what: string): ProviderError {
    return new ProviderError(`${this.provider} answered malformed embeddings: ${what}`, {
      provider: this.provider,
      retryable: false,
      code: 'malformed_answer',
    });
  }

  #refusal(response: Response, apiKey: string | null): Promise<ProviderError> {
    return refusalError(this.provider, response, apiKey, quotaExhausted);
  }
}

function headers(apiKey: string | null): Record<string, string> {
  const result: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (apiKey) result.authorization = `Bearer ${apiKey}`;
  return result;
}

/**
 * A vector as the service sent it: base64 of little-endian float32 (what we ask for), or a list of
 * numbers (what a compatible server that ignores `encoding_format` sends). Undefined when it is neither.
 */
export function decode(embedding: unknown): Float32Array | undefined {
  if (typeof embedding === 'string') {
    const bytes = Buffer.from(embedding, 'base64');
    if (bytes.length % 4 !== 0) return undefined;
    const vector = new Float32Array(bytes.length / 4);
    for (let i = 0; i < vector.length; i++) vector[i] = bytes.readFloatLE(i * 4);
    return vector;
  }
  if (Array.isArray(embedding) && embedding.every((x) => typeof x === 'number' && Number.isFinite(x))) {
    return Float32Array.from(embedding as number[]);
  }
  return undefined;
}
