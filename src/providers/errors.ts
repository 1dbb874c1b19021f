/**
 * Failures of outside services, typed so that callers decide without parsing messages: a retryable
 * failure (network, time-out, 408, 429, 5xx) may succeed later; a permanent one (other 4xx, a refusal)
 * will not.
 */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly options: {
      provider: string;
      retryable: boolean;
      /** The HTTP status the service answered, if it answered. */
      status?: number;
      /** The service's own error code, if it gave one. */
      code?: string;
      /** How long the service asked us to wait before trying again (a 429's retry-after). */
      retryAfterSeconds?: number;
      cause?: unknown;
    },
  ) {
    super(message, { cause: options.cause });
    this.name = 'ProviderError';
  }

  get retryable(): boolean {
    return this.options.retryable;
  }

  get status(): number | undefined {
    return this.options.status;
  }

  get code(): string | undefined {
    return this.options.code;
  }
}

/**
 * When a streaming request's milestones happened, on the monotonic clock (`performance.now()`,
 * milliseconds): what the call runtime's per-turn measurements are made of.
 */
export interface RequestTiming {
  /** The request was sent (or the connection asked for). */
  startedAt: number;
  /** The connection was open (WebSocket vendors). */
  connectedAt?: number;
  /** The first token, transcript or audio byte arrived. */
  firstByteAt?: number;
  /** The last of it arrived. */
  endedAt?: number;
}

/**
 * A failure as a ProviderError: one already is, anything else (a bug, a socket error an adapter did
 * not name) counts as retryable, so the caller tries the next key rather than giving up.
 */
export function asProviderError(error: unknown, provider: string): ProviderError {
  return error instanceof ProviderError
    ? error
    : new ProviderError((error as Error).message, { provider, retryable: true, cause: error });
}

/** Whether an HTTP status is worth retrying: time-outs, rate limits and server faults. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}
