/**
 * No text holding U+0000 reaches a handler. PostgreSQL cannot store NUL in `text` or `jsonb`
 * (SQLSTATE 22021 / 22P05), so a NUL anywhere in a request would otherwise fail its statement as a
 * 500 — login and register included. One hook, before validation, looks at every part of every
 * request that takes input: path and query parameters, a JSON body (object keys too), a form body,
 * and a raw text body (carrier callbacks, read as text for their signatures, are forms or JSON); the
 * multipart reader and the contact-file reader apply `nulIssues` (lib/nul.ts) to their own fields and
 * cells.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ValidationFailed, type ValidationIssue } from '../domains/errors.js';
import { NUL, nulIssue, nulIssues } from '../lib/nul.js';

/** A text body: the fields of a form, the values of JSON, or the text itself. */
function textBodyIssues(request: FastifyRequest, text: string): ValidationIssue[] {
  const type = String(request.headers['content-type'] ?? '').toLowerCase();
  if (type.startsWith('application/x-www-form-urlencoded')) {
    const found: ValidationIssue[] = [];
    for (const [name, value] of new URLSearchParams(text)) {
      if (name.includes(NUL)) found.push(nulIssue(['body', name]));
      else if (value.includes(NUL)) found.push(nulIssue(['body', name]));
    }
    return found;
  }
  if (type.includes('json')) {
    try {
      return nulIssues(JSON.parse(text), ['body']);
    } catch {
      // Not JSON after all: its reader refuses it; the text itself is still looked at below.
    }
  }
  return text.includes(NUL) ? [nulIssue(['body'])] : [];
}

/** The guard itself, as a route's `preValidation` hook. */
function nulGuard(request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  const found = [
    ...nulIssues(request.params, ['path']),
    ...nulIssues(request.query, ['query']),
    ...(typeof request.body === 'string'
      ? textBodyIssues(request, request.body)
      : nulIssues(request.body, ['body'])),
  ];
  done(found.length > 0 ? new ValidationFailed(found) : undefined);
}

const MAY_CARRY_A_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Installs the guard on every route that takes input: path or query parameters, or a body. A route
 * that takes none (`GET /api/v1/auth/whoami`, the health check) has nothing to look at, and is spared
 * a hook on its hot path.
 */
export function installNulGuard(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const schema = (route.schema ?? {}) as Record<string, unknown>;
    const methods = [route.method].flat();
    const takesInput =
      Boolean(schema.params || schema.querystring || schema.body) ||
      route.url.includes(':') ||
      methods.some((method) => MAY_CARRY_A_BODY.has(method));
    if (!takesInput) return;
    const existing = route.preValidation ? [route.preValidation].flat() : [];
    route.preValidation = [nulGuard, ...existing];
  });
}
