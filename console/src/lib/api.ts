/**
 * The console's way to the API: the typed client (`clients/typescript`), same origin, so the
 * browser sends the session cookie itself. State-changing requests carry the session's CSRF token
 * (`X-CSRF-Token`), which the API requires of cookie requests. The few JWT-only operations (SMS
 * compliance) are sent with the access token this tab got at sign-in instead (lib/credentials.ts).
 * Failures become an `ApiError` with the status and the API's `detail`, field problems included.
 */
import { createSwitchboardClient } from '../../../clients/typescript/src/index.js';
import { credentials } from './credentials.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Paths the API accepts only with a JWT bearer token (the spec's SMS compliance routes). */
const JWT_ONLY = /^\/v1\/sms-compliance\//;
/** Where a 401 means a refused password, not an ended session. */
const SIGN_IN = /^\/api\/v1\/auth\/login$/;

/** One problem with one field, as the API's validation lists them. */
export interface FieldProblem {
  /** Where the value was, without the leading `body`/`query`/`path` (e.g. `["llm_settings","temperature"]`). */
  path: Array<string | number>;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly problems: FieldProblem[] = [],
  ) {
    super(message);
  }

  /** The problem named for a field (dotted path, e.g. `llm_settings.temperature`), if any. */
  problemAt(field: string): string | undefined {
    return this.problems.find((p) => p.path.join('.') === field)?.message;
  }
}

interface Issue {
  loc?: Array<string | number>;
  msg?: string;
}

/** Reads the API's error body (`{detail}`: a string, or a list of issues) into an ApiError. */
export function apiError(status: number, body: unknown): ApiError {
  const detail = (body as { detail?: unknown } | null)?.detail;
  if (Array.isArray(detail)) {
    const problems = (detail as Issue[]).map((issue) => ({
      path: (issue.loc ?? []).slice(1),
      message: issue.msg ?? 'Not valid',
    }));
    const first = problems[0];
    const summary = first
      ? `${first.path.join('.') || 'Request'}: ${first.message}${problems.length > 1 ? ` (+${problems.length - 1} more)` : ''}`
      : 'The request was not valid';
    return new ApiError(status, summary, problems);
  }
  if (typeof detail === 'string') return new ApiError(status, detail);
  return new ApiError(
    status,
    status >= 500 ? 'The server could not answer; try again' : `Request failed (${status})`,
  );
}

export const api = createSwitchboardClient({ baseUrl: location.origin });

api.use({
  onRequest({ request }) {
    const path = new URL(request.url).pathname;
    const token = JWT_ONLY.test(path) ? credentials.accessToken() : undefined;
    if (token) request.headers.set('authorization', `Bearer ${token}`);
    else if (!SAFE_METHODS.has(request.method)) {
      const csrf = credentials.csrf();
      if (csrf) request.headers.set('x-csrf-token', csrf);
    }
    return request;
  },
  onResponse({ request, response }) {
    // A session that ended elsewhere (logged out, expired) sends the user to sign in. A refused
    // sign-in is no such thing: a wrong password typed to renew the access token (the SMS compliance
    // page) must not end the session it was typed in.
    if (response.status === 401 && !SIGN_IN.test(new URL(request.url).pathname)) credentials.expired();
    return response;
  },
});

/** The data of an openapi-fetch result, or its error thrown as an ApiError. */
export async function ok<T>(
  call: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<NonNullable<T>> {
  const { data, error, response } = await call;
  if (error !== undefined || !response.ok) throw apiError(response.status, error);
  return data as NonNullable<T>;
}
