/**
 * The error envelope of decisions §2. Services throw the domain's errors (domains/errors.ts); the
 * handler installed by `installErrorHandling` turns every error — theirs, Fastify's, or an unexpected
 * one — into `{detail}` (a string, or FastAPI's list for validation failures) with no stack, SQL or
 * secret. The status (and headers) of each domain error kind is decided in one table, `KINDS`.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDataException } from '../db/errors.js';
import { DomainError, type ErrorKind, ValidationFailed, type ValidationIssue } from '../domains/errors.js';

/** A failure of the HTTP layer's own with a raw status, for the rare answer no domain kind says. */
export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'AppError';
  }
}

/** A domain error kind as HTTP says it: the status, and the headers that go with it. */
interface KindAnswer {
  status: number;
  headers?: (error: DomainError) => Record<string, string>;
}

/** The one table from domain error kinds to statuses (docs/errors.md lists it for contributors). */
const KINDS: Record<ErrorKind, KindAnswer> = {
  invalid: { status: 400 },
  unauthenticated: { status: 401, headers: () => ({ 'WWW-Authenticate': 'Bearer' }) },
  payment_required: { status: 402 },
  forbidden: { status: 403 },
  not_found: { status: 404 },
  conflict: { status: 409 },
  too_large: { status: 413 },
  unsupported: { status: 415 },
  rate_limited: {
    status: 429,
    headers: (error): Record<string, string> =>
      error.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(error.retryAfterSeconds) },
  },
  internal: { status: 500 },
  upstream_failed: { status: 502 },
};

/** The status a domain error (or the HTTP layer's own `AppError`) is answered with. */
export function statusOf(error: DomainError | AppError): number {
  return error instanceof AppError ? error.statusCode : KINDS[error.kind].status;
}

interface AjvIssue {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

const CONTEXT_NAMES: Record<string, string> = {
  body: 'body',
  querystring: 'query',
  params: 'path',
  headers: 'header',
};

/** Pydantic-style error types, so clients written against FastAPI services read ours the same way. */
function issueType(issue: AjvIssue): string {
  switch (issue.keyword) {
    case 'required':
      return 'missing';
    case 'type':
      return `${String(issue.params.type).split(',')[0]}_type`;
    case 'minLength':
      return 'string_too_short';
    case 'maxLength':
      return 'string_too_long';
    case 'pattern':
      return 'string_pattern_mismatch';
    case 'minimum':
      return 'greater_than_equal';
    case 'exclusiveMinimum':
      return 'greater_than';
    case 'maximum':
      return 'less_than_equal';
    case 'exclusiveMaximum':
      return 'less_than';
    case 'enum':
    case 'const':
      return 'enum';
    case 'minItems':
      return 'too_short';
    case 'maxItems':
      return 'too_long';
    case 'additionalProperties':
      return 'extra_forbidden';
    case 'format':
      return `value_error.${String(issue.params.format)}`;
    case 'decimalText':
      return issue.params.type === 'integer' ? 'int_parsing' : 'float_parsing';
    default:
      return 'value_error';
  }
}

function issueMessage(issue: AjvIssue): string {
  switch (issue.keyword) {
    case 'required':
      return 'Field required';
    case 'additionalProperties':
      return 'Extra inputs are not permitted';
    case 'enum':
      return `Input should be ${(issue.params.allowedValues as unknown[]).map((v) => `'${String(v)}'`).join(', ')}`;
    case 'const':
      return `Input should be '${String(issue.params.allowedValue)}'`;
    case 'format':
      return `Input is not a valid ${String(issue.params.format)}`;
    default: {
      const text = issue.message ?? 'Invalid value';
      return text.charAt(0).toUpperCase() + text.slice(1);
    }
  }
}

export function toValidationIssues(issues: AjvIssue[], context: string): ValidationIssue[] {
  const seen = new Map<string, ValidationIssue>();
  const out: ValidationIssue[] = [];
  for (const issue of issues) {
    // Unions report one failure per branch plus a summary; the summary says it once.
    if (issue.keyword === 'anyOf' || issue.keyword === 'oneOf') continue;
    const path = issue.instancePath
      .split('/')
      .slice(1)
      .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
      .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
    if (issue.keyword === 'required') path.push(String(issue.params.missingProperty));
    if (issue.keyword === 'additionalProperties') path.push(String(issue.params.additionalProperty));
    const loc = [CONTEXT_NAMES[context] ?? context, ...path];
    const entry = { loc, msg: issueMessage(issue), type: issueType(issue) };
    const key = JSON.stringify(entry.loc) + entry.type;
    const earlier = seen.get(key);
    if (earlier) {
      // A union of literals fails once per literal: say all the allowed values in one issue.
      if (issue.keyword === 'const') earlier.msg += ` or '${String(issue.params.allowedValue)}'`;
      continue;
    }
    seen.set(key, entry);
    out.push(entry);
  }
  return out;
}

/** Fastify's own errors a client can cause, with the status and message they get. */
const CLIENT_ERRORS: Record<string, { status: number; detail?: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, detail: 'Request body is too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, detail: 'Unsupported media type' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, detail: 'Content-Length does not match the body' },
  FST_ERR_ASYNC_CONSTRAINT: { status: 400 },
};

/** Fastify's `frameworkErrors`: a URL the router refuses (malformed, or a segment too long). */
export function answerFrameworkError(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  reply.header('X-Request-Id', request.id);
  const status = error.code === 'FST_ERR_BAD_URL' ? 400 : (error.statusCode ?? 400);
  reply.code(status).send({ detail: status === 414 ? 'A path segment is too long' : 'Malformed URL' });
}

/** The answer to an error: its status, extra headers, and the envelope. */
export interface ErrorAnswer {
  status: number;
  headers: Record<string, string>;
  body: { detail: string | ValidationIssue[] };
}

/**
 * Turns every error — ours, Fastify's, or an unexpected one (logged here) — into the envelope of
 * decisions §2. Every error handler answers through this, so statuses and texts never drift apart.
 */
export function errorAnswer(
  error: FastifyError | DomainError | AppError | ValidationFailed,
  request: FastifyRequest,
): ErrorAnswer {
  const validationStatus = request.routeOptions.config?.validationStatus ?? 422;
  const answer = (
    status: number,
    detail: string | ValidationIssue[],
    headers: Record<string, string> = {},
  ) => ({
    status,
    headers,
    body: { detail },
  });
  if (error instanceof DomainError) {
    const kind = KINDS[error.kind];
    return answer(kind.status, error.detail, kind.headers?.(error));
  }
  if (error instanceof AppError) return answer(error.statusCode, error.detail, error.headers);
  if (error instanceof ValidationFailed) return answer(error.status ?? validationStatus, error.issues);
  if ('validation' in error && error.validation) {
    return answer(
      validationStatus,
      toValidationIssues(error.validation as AjvIssue[], error.validationContext ?? 'body'),
    );
  }
  const code = 'code' in error ? error.code : undefined;
  if (code === 'FST_ERR_CTP_INVALID_JSON_BODY' || (error instanceof SyntaxError && 'statusCode' in error)) {
    return answer(validationStatus, [{ loc: ['body'], msg: 'JSON decode error', type: 'json_invalid' }]);
  }
  if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY') {
    return answer(validationStatus, [{ loc: ['body'], msg: 'Field required', type: 'missing' }]);
  }
  const known = code ? CLIENT_ERRORS[code] : undefined;
  if (known) return answer(known.status, known.detail ?? error.message);
  const status = 'statusCode' in error ? error.statusCode : undefined;
  if (status && status >= 400 && status < 500) {
    // Another client error raised by Fastify or a plugin: its status stands, its text is generic.
    return answer(status, 'Bad request');
  }
  if (isDataException(error)) {
    // Validation should have refused the value (see http/validation.ts); the class of bug is still
    // the client's value, not a fault, and the log line says which statement needs a bound.
    request.log.warn({ err: error }, 'the database refused a value of the request');
    const where = request.body === undefined || request.body === null ? 'query' : 'body';
    return answer(validationStatus, [
      {
        loc: [where],
        msg: 'A value is out of range or malformed for what it is stored in',
        type: 'value_error',
      },
    ]);
  }
  request.log.error({ err: error }, 'unhandled error');
  return answer(500, 'Internal server error');
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ detail: `Not found: ${request.method} ${request.url.split('?')[0]}` });
  });

  app.setErrorHandler((error: FastifyError | DomainError | AppError | ValidationFailed, request, reply) => {
    const answer = errorAnswer(error, request);
    return reply.code(answer.status).headers(answer.headers).send(answer.body);
  });
}

/** The one-line text of an envelope's detail (validation issues joined as `where: what`). */
export function detailText(detail: string | ValidationIssue[]): string {
  if (typeof detail === 'string') return detail;
  return `Invalid parameters: ${detail.map((issue) => `${issue.loc.join('.')}: ${issue.msg}`).join('; ')}`;
}

/**
 * For operations whose error bodies add `success: false` and a `message` to the envelope (the
 * serverless listing): installed on the operation's own plugin scope, it answers the same status and
 * `detail` as every other route, plus those two fields. 401 and 403 keep the bare envelope: they come
 * from authentication, which answers alike on every route.
 */
export function installSuccessFlagErrors(scope: FastifyInstance): void {
  scope.setErrorHandler((error: FastifyError | DomainError | AppError | ValidationFailed, request, reply) => {
    const answer = errorAnswer(error, request);
    const body =
      answer.status === 401 || answer.status === 403
        ? answer.body
        : { success: false, detail: answer.body.detail, message: detailText(answer.body.detail) };
    return reply.code(answer.status).headers(answer.headers).send(body);
  });
}
