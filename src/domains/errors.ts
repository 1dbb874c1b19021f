/**
 * The expected failures of services, in the domain's words: what went wrong, never which HTTP status
 * says it. `http/errors.ts` maps each kind to its status and headers in one table; the CLI prints the
 * detail. A leaf module (it imports nothing), so every layer may throw these.
 */

/** What kind of refusal: the HTTP layer's table (http/errors.ts) turns each into a status. */
export type ErrorKind =
  /** The request cannot be carried out as sent (a rule with no one field to point at). */
  | 'invalid'
  /** No credential, or one that is invalid, expired or revoked. */
  | 'unauthenticated'
  /** The organization's wallet cannot pay for it. */
  | 'payment_required'
  /** Authenticated but not allowed. */
  | 'forbidden'
  /** Missing — or another organization's, which must look the same. */
  | 'not_found'
  /** A uniqueness clash, or a state that does not allow the action. */
  | 'conflict'
  /** More than the operation accepts (a file, a form). */
  | 'too_large'
  /** Sent in a form the operation does not read. */
  | 'unsupported'
  /** Too many attempts; `retryAfterSeconds` says when to try again. */
  | 'rate_limited'
  /** A fault of ours the caller is told about in words of our choosing. */
  | 'internal'
  /** An outside service (a carrier, a cloud) refused or could not be reached. */
  | 'upstream_failed';

export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly detail: string,
    /** For `rate_limited`: seconds until a retry may succeed. */
    readonly retryAfterSeconds?: number,
  ) {
    super(detail);
    this.name = 'DomainError';
  }
}

// The factories keep the names services have always used, so a call site reads as before.
export const badRequest = (detail: string) => new DomainError('invalid', detail);
export const unauthorized = (detail = 'Not authenticated') => new DomainError('unauthenticated', detail);
export const paymentRequired = (detail: string) => new DomainError('payment_required', detail);
export const forbidden = (detail = 'Not allowed') => new DomainError('forbidden', detail);
export const notFound = (detail = 'Not found') => new DomainError('not_found', detail);
export const conflict = (detail: string) => new DomainError('conflict', detail);
export const tooLarge = (detail: string) => new DomainError('too_large', detail);
export const unsupported = (detail: string) => new DomainError('unsupported', detail);
export const rateLimited = (detail: string, retryAfterSeconds: number) =>
  new DomainError('rate_limited', detail, retryAfterSeconds);
export const internalError = (detail: string) => new DomainError('internal', detail);
export const upstreamFailed = (detail: string) => new DomainError('upstream_failed', detail);

/** One invalid value: where (`body`/`query`/`path`/`header`, then the path inside), what, and a kind. */
export interface ValidationIssue {
  loc: Array<string | number>;
  msg: string;
  type: string;
}

/** Raised by services for a rule the request schema cannot express; answered like schema failures. */
export class ValidationFailed extends Error {
  constructor(
    readonly issues: ValidationIssue[],
    /** A status of its own; otherwise the route's (422, or 400 where the API says so). */
    readonly status?: 400 | 422,
  ) {
    super('Validation failed');
    this.name = 'ValidationFailed';
  }
}

export function invalidField(
  loc: Array<string | number>,
  msg: string,
  type = 'value_error',
): ValidationFailed {
  return new ValidationFailed([{ loc, msg, type }]);
}
