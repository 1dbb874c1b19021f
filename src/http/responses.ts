/**
 * The error statuses an operation declares, each with its envelope and a sentence saying when: a
 * route spreads `...errors(404, 409)` into its `response`, or `...errors({ 404: 'Assistant not found
 * in your organization' })` where its own words say more than the standard ones. The test harness
 * fails on any status a route answers without declaring it (test/support/harness.ts), so what the
 * document says a route answers is what it answers. `noContent` is the one way to answer 204.
 */
import type { TSchema } from 'typebox';
import { ErrorBody } from './schemas.js';

/** When each status is answered, in the words used unless a route says better. */
export const STANDARD_DESCRIPTIONS = {
  400: 'The request cannot be carried out as sent (see detail)',
  401: 'Missing or invalid credentials',
  402: 'Insufficient balance',
  403: 'Authenticated but not allowed',
  404: 'Not found in your organization',
  409: 'Another request changed it, or its state does not allow this',
  413: 'Body too large',
  415: 'Unsupported media type',
  422: 'Validation failed',
  429: 'Rate limit exceeded (Retry-After says when to try again)',
  500: 'A fault of ours; the log line carries the request id',
  502: 'The carrier refused or could not be reached',
  503: 'Not ready to serve',
} as const;

export type ErrorStatus = keyof typeof STANDARD_DESCRIPTIONS;
type Described = Partial<Record<ErrorStatus, string>>;
type Entry = ErrorStatus | Described;

/** The statuses named by `entries`: plain numbers and the keys of description objects. */
type StatusesOf<E extends readonly Entry[]> = {
  [I in keyof E]: E[I] extends ErrorStatus ? E[I] : E[I] extends Described ? keyof E[I] & ErrorStatus : never;
}[number];

/** `{ status: body with a description }` for each entry, the standard description unless one is given. */
export function errorsWith<B extends TSchema, const E extends readonly Entry[]>(
  body: B,
  ...entries: E
): Record<StatusesOf<E>, B> {
  const out: Record<string, unknown> = {};
  for (const entry of entries) {
    const described: Described =
      typeof entry === 'number' ? { [entry]: STANDARD_DESCRIPTIONS[entry] } : entry;
    for (const [status, description] of Object.entries(described)) {
      out[status] = { ...body, description };
    }
  }
  return out as Record<StatusesOf<E>, B>;
}

/** Error statuses answered with the common envelope, `ErrorBody`. */
export function errors<const E extends readonly Entry[]>(
  ...entries: E
): Record<StatusesOf<E>, typeof ErrorBody> {
  return errorsWith(ErrorBody, ...entries);
}

/** Answers 204 with no body (a deletion; the route declares `204: Type.Null()`). */
export function noContent<R>(reply: { code(statusCode: 204): { send(payload: null): R } }): R {
  return reply.code(204).send(null);
}
