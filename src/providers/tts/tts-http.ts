/**
 * The HTTP half of the text-to-speech vendors that take one whole input per request (tts_b, tts_c):
 * one POST with a time-out on the answer's arrival, every way it can fail named as a ProviderError
 * (unreachable and timed out are retryable; a refusal by its status, the vendor deciding the rest),
 * and the answer's body read chunk by chunk, where a connection cut mid-body is a retryable
 * `stream_incomplete`. Aborting the caller's signal ends the request at once.
 */

import { ProviderError } from '../errors.js';
import { retryAfterSeconds } from '../llm/openai-chat.js';

/** How much of a refusal's body is kept: enough for the vendor's JSON error, never a whole page. */
const ERROR_BODY_LIMIT = 8_192;

/** What a vendor makes of a refusal: its code, whether another try may pass, how long to wait. */
export interface Refusal {
  code?: string;
  retryable: boolean;
  retryAfterSeconds?: number;
}

export interface AudioRequest {
  provider: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal;
  /** How long the vendor may take to start answering (headers). */
  timeoutMs: number;
  /** The vendor's reading of an error answer (status, body, headers). */
  describeRefusal(status: number, body: string, headers: Headers): Refusal;
}

/** Sends the request; resolves to an OK response, or rejects with a ProviderError (or the abort). */
export async function postForAudio(request: AudioRequest): Promise<Response> {
  const { provider, signal } = request;
  signal.throwIfAborted();
  const http = new AbortController();
  const onAbort = () => http.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    http.abort();
  }, request.timeoutMs);
  let response: Response;
  try {
    response = await fetch(request.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...request.headers },
      body: JSON.stringify(request.body),
      signal: http.signal,
    });
  } catch (error) {
    signal.throwIfAborted();
    throw new ProviderError(
      timedOut ? `${provider} did not answer in time` : `${provider} could not be reached`,
      { provider, retryable: true, code: timedOut ? 'timeout' : undefined, cause: error },
    );
  } finally {
    clearTimeout(timer);
  }
  // The body is read after this returns: the caller's abort must still end it, the time-out not.
  signal.removeEventListener('abort', onAbort);
  if (signal.aborted) http.abort(signal.reason);
  else signal.addEventListener('abort', () => http.abort(signal.reason), { once: true });
  if (response.ok) return response;
  const body = await readLimited(response);
  const refusal = request.describeRefusal(response.status, body, response.headers);
  throw new ProviderError(
    `${provider} refused the request: ${response.status}${refusal.code ? ` (${refusal.code})` : ''}`,
    {
      provider,
      retryable: refusal.retryable,
      status: response.status,
      code: refusal.code,
      retryAfterSeconds: refusal.retryable
        ? (retryAfterSeconds(response.headers) ?? refusal.retryAfterSeconds)
        : undefined,
    },
  );
}

/** The body's chunks as they arrive; a cut connection is a retryable `stream_incomplete`. */
export async function* bodyChunks(
  response: Response,
  provider: string,
  signal: AbortSignal,
): AsyncGenerator<Uint8Array> {
  if (!response.body) throw incomplete(provider, 'the answer had no body');
  const reader = response.body.getReader();
  try {
    for (;;) {
      let step: Awaited<ReturnType<typeof reader.read>>;
      try {
        step = await reader.read();
      } catch (error) {
        signal.throwIfAborted();
        throw incomplete(provider, 'the answer was cut off', error);
      }
      if (step.done) return;
      if (step.value.length > 0) yield step.value;
    }
  } finally {
    reader.releaseLock();
    // A reader that stops early (an abort, a failure elsewhere) must not leave the request open.
    void response.body.cancel().catch(() => {});
  }
}

/** The whole body, for vendors that answer in one JSON document. */
export async function wholeBody(response: Response, provider: string, signal: AbortSignal): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of bodyChunks(response, provider, signal)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

export function incomplete(provider: string, what: string, cause?: unknown): ProviderError {
  return new ProviderError(`${provider}: ${what}`, {
    provider,
    retryable: true,
    code: 'stream_incomplete',
    cause,
  });
}

async function readLimited(response: Response): Promise<string> {
  try {
    const text = await response.text();
    return text.slice(0, ERROR_BODY_LIMIT);
  } catch {
    return '';
  }
}

/** A JSON object's field, when the text is a JSON object. */
export function parseJsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
