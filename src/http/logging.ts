/**
 * Logger options: structured JSON, with credentials redacted wherever they could appear — headers,
 * known secret fields, token-bearing query parameters in URLs — and database errors reduced to their
 * SQLSTATE and the places they name (`serializeError`), never the values of the statement.
 */
import type { FastifyServerOptions } from 'fastify';
import { type SerializedError, stdSerializers } from 'pino';
import { withoutValues } from '../db/errors.js';

const SECRET_FIELDS = [
  'password',
  'new_password',
  'current_password',
  'confirm_password',
  'api_key',
  'auth_token',
  'token',
  'access_token',
  'refresh_token',
  'csrf_token',
  'secret',
  'secret_key',
  'private_key',
  'signature_secret',
  'webhook_secret',
  'key',
  'access_key',
];

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-csrf-token"]',
  'res.headers["set-cookie"]',
  ...SECRET_FIELDS.flatMap((field) => [field, `*.${field}`]),
];

/** Query parameters whose values are credentials (compared decoded and case-insensitively). */
const SECRET_QUERY_NAMES = new Set([
  'token',
  'access_token',
  'refresh_token',
  'api_key',
  'key',
  'secret',
  'password',
  'access_key',
  'secret_key',
]);
const QUERY_PARAMETER = /([?&])([^=&#]*)=([^&#]*)/g;

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' ')).toLowerCase();
  } catch {
    return name.toLowerCase();
  }
}

/** Path parameters that carry a credential (e.g. the invitation token in /users/invitation/:token). */
const SECRET_PARAMS = ['token'];

export function redactUrl(url: string, params?: Record<string, unknown>): string {
  // Names are decoded first, so `secret%5Fkey=` is recognised as the `secret_key` the server reads.
  let redacted = url.replace(QUERY_PARAMETER, (whole, separator: string, name: string) =>
    SECRET_QUERY_NAMES.has(decodedName(name)) ? `${separator}${name}=[REDACTED]` : whole,
  );
  for (const name of SECRET_PARAMS) {
    const value = params?.[name];
    if (typeof value === 'string' && value.length > 0) {
      redacted = redacted.split(encodeURIComponent(value)).join('[REDACTED]').split(value).join('[REDACTED]');
    }
  }
  return redacted;
}

/**
 * The `err` of a log line. A database error — pg's, PGlite's, or Drizzle's wrapper, whose message is
 * the failed statement followed by every parameter — is logged as its facts and the call stack
 * only; any other error as pino logs it.
 */
export function serializeError(error: Error): SerializedError {
  const safe = withoutValues(error);
  if (!safe) return stdSerializers.err(error);
  // (pino's type wants the original error under `raw`, which its own serializer hides; this one
  // must not carry it at all, or it would be written out.)
  return {
    type: 'DatabaseError',
    ...safe.facts,
    message: safe.message,
    stack: safe.frames,
  } as SerializedError;
}

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    serializers: {
      err: serializeError,
      req(request: { method: string; url: string; id: string; ip?: string; params?: unknown }) {
        const params = request.params as Record<string, unknown> | undefined;
        return {
          id: request.id,
          method: request.method,
          url: redactUrl(request.url, params),
          ip: request.ip,
        };
      },
    },
  };
}
