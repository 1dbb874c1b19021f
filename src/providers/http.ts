/**
 * One way for adapters to call outside HTTP APIs: a time limit on every request, and every failure
 * turned into a ProviderError (retryable or permanent) that carries the service's status and code.
 */
import { isRetryableStatus, ProviderError } from './errors.js';

export interface ProviderRequest {
  provider: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  headers?: Record<string, string>;
  /** A string is sent as is; an object as JSON; URLSearchParams as a form. */
  body?: string | URLSearchParams | Record<string, unknown>;
  timeoutMs?: number;
}

export interface ProviderResponse<T> {
  status: number;
  body: T;
}

/** How long a request to an outside service may take, unless its adapter says otherwise. */
export const DEFAULT_TIMEOUT_MS = 10_000;

export async function providerRequest<T = unknown>(request: ProviderRequest): Promise<ProviderResponse<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...request.headers };
  let body: string | undefined;
  if (request.body instanceof URLSearchParams) {
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
    body = request.body.toString();
  } else if (typeof request.body === 'string') {
    body = request.body;
  } else if (request.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(request.body);
  }
  let response: Response;
  try {
    response = await fetch(request.url, {
      method: request.method,
      headers,
      body,
      signal: AbortSignal.timeout(request.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    });
  } catch (error) {
    const timedOut = (error as Error).name === 'TimeoutError';
    throw new ProviderError(
      timedOut ? `${request.provider} did not answer in time` : `${request.provider} could not be reached`,
      { provider: request.provider, retryable: true, cause: error },
    );
  }
  const text = await response.text();
  let parsed: unknown = text;
  if (text !== '' && (response.headers.get('content-type') ?? '').includes('json')) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = text;
    }
  }
  if (!response.ok) {
    const { message, code } = describeFailure(parsed);
    throw new ProviderError(
      `${request.provider} answered ${response.status}${message ? `: ${message}` : ''}`,
      {
        provider: request.provider,
        retryable: isRetryableStatus(response.status),
        status: response.status,
        code,
      },
    );
  }
  return { status: response.status, body: parsed as T };
}

/** The message and code of an error body, in the shapes the carriers and vendors use. */
function describeFailure(body: unknown): { message?: string; code?: string } {
  if (typeof body === 'string') return { message: body.slice(0, 200) || undefined };
  if (typeof body !== 'object' || body === null) return {};
  const record = body as Record<string, unknown>;
  const first = Array.isArray(record.errors) ? (record.errors[0] as Record<string, unknown>) : undefined;
  const message = record.message ?? record.detail ?? record.title ?? first?.detail ?? first?.title;
  const code = record.code ?? first?.code;
  return {
    message: typeof message === 'string' ? message.slice(0, 200) : undefined,
    code: code === undefined ? undefined : String(code),
  };
}
