/**
 * What every language model dialect does with an HTTP answer that is not a stream: read a bounded
 * part of the error body, keep keys out of the messages we build from it, and read how long the
 * vendor asked us to wait; and the failures a streamed answer can have. Shared by the chat
 * completions and the messages API adapters, whose vendors quote refused keys and send
 * `retry-after` alike.
 */
import { isRetryableStatus, ProviderError } from '../errors.js';

/** How much of an error answer is read: enough for the vendor's JSON error, never a whole page. */
const ERROR_BODY_LIMIT = 8_192;

export async function readLimited(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (text.length < ERROR_BODY_LIMIT) {
      const step = await reader.read();
      if (step.done) break;
      text += decoder.decode(step.value, { stream: true });
    }
  } catch {
    // A body cut short still says what it said so far.
  } finally {
    void reader.cancel().catch(() => {});
  }
  return text.slice(0, ERROR_BODY_LIMIT);
}

/**
 * Vendors quote the key they refused ("Incorrect API key provided: sk-abc…"), partly masked or not:
 * neither the key nor anything shaped like one goes into our error messages (they reach logs).
 */
export function withoutSecrets(message: string, apiKey: string | null): string {
  let clean = apiKey ? message.split(apiKey).join('[redacted]') : message;
  clean = clean.replace(/\b(sk|gsk|xai|AIza)[-_A-Za-z0-9*.]{4,}/g, '[redacted]');
  return clean;
}

/** `retry-after-ms` (milliseconds), else `retry-after` (seconds or an HTTP date). */
export function retryAfterSeconds(headers: Headers): number | undefined {
  const msText = headers.get('retry-after-ms');
  const ms = msText === null || msText.trim() === '' ? Number.NaN : Number(msText);
  if (Number.isFinite(ms) && ms >= 0) return ms / 1000;
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - Date.now()) / 1000);
}

/** A `data:` payload as JSON, or undefined for a line that is not (a gateway's stray text). */
export function parseJson(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

/**
 * The vendor's error object: `{"error": {"message", "type", "code"}}` in the chat completions dialect
 * (some gateways wrap it in an array), `{"type": "error", "error": {"type", "message", "details":
 * {"error_code"}}}` in the messages API. A body that is not JSON gives its start as the message.
 */
export function describeErrorBody(text: string): { message?: string; code?: string; type?: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { message: text.trim().slice(0, 200) || undefined };
  }
  const root = Array.isArray(parsed) ? parsed[0] : parsed;
  const error = (root as Record<string, unknown> | null)?.error ?? root;
  if (typeof error !== 'object' || error === null) return {};
  const { message, code, type, details } = error as Record<string, unknown>;
  const detailCode = (details as Record<string, unknown> | null | undefined)?.error_code;
  const named = code ?? detailCode;
  return {
    message: typeof message === 'string' ? message.slice(0, 200) : undefined,
    code: typeof named === 'string' || typeof named === 'number' ? String(named) : undefined,
    type: typeof type === 'string' ? type : undefined,
  };
}

/**
 * The error for a vendor's refusal (a non-2xx answer): retryable by its status unless the vendor's
 * error says the account is spent (`spent`), with the vendor's code and retry-after. A refused key
 * (401, 403) may be quoted back in the vendor's message, so that message stays out of ours; any other
 * message is kept with the key masked.
 */
export async function refusalError(
  provider: string,
  response: Response,
  apiKey: string | null,
  spent: (described: { code?: string; type?: string }) => boolean,
): Promise<ProviderError> {
  const described = describeErrorBody(await readLimited(response));
  const message = response.status === 401 || response.status === 403 ? undefined : described.message;
  const retryable = isRetryableStatus(response.status) && !spent(described);
  return new ProviderError(
    `${provider} answered ${response.status}${message ? `: ${withoutSecrets(message, apiKey)}` : ''}`,
    {
      provider,
      retryable,
      status: response.status,
      code: described.code ?? described.type,
      retryAfterSeconds: retryable ? retryAfterSeconds(response.headers) : undefined,
    },
  );
}

/** Out of credit, in the chat completions dialect (a 429 that waiting does not cure). */
export const quotaExhausted = (described: { code?: string; type?: string }): boolean =>
  described.code === 'insufficient_quota' || described.type === 'insufficient_quota';

/**
 * The failures every streamed answer can have, the same whatever the dialect: all worth another
 * try (the next key or provider), each with its code.
 */
export function answerErrors(provider: string) {
  return {
    /** An error the vendor reported inside a successful answer (an error event, an error finish). */
    reported: (error: { message: string; code?: string; type?: string }) =>
      new ProviderError(`${provider} reported an error mid-stream: ${error.message}`, {
        provider,
        retryable: true,
        code: error.code ?? error.type,
      }),
    timeout: (cause: unknown) =>
      new ProviderError(`${provider} sent no first token in time`, {
        provider,
        retryable: true,
        code: 'first_token_timeout',
        cause,
      }),
    unreachable: (cause: unknown) =>
      new ProviderError(`${provider} could not be reached`, { provider, retryable: true, cause }),
    broken: (what: string, cause?: unknown) =>
      new ProviderError(`${provider}: ${what}`, {
        provider,
        retryable: true,
        code: 'stream_incomplete',
        cause,
      }),
  };
}
