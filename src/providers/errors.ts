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
}

/** Whether an HTTP status is worth retrying: time-outs, rate limits and server faults. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}
