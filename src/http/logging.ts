/**
 * Logger options: structured JSON, with credentials redacted wherever they could appear — headers,
 * known secret fields, and token-bearing query parameters in URLs.
 */
import type { FastifyServerOptions } from 'fastify';

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
  'key',
];

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-csrf-token"]',
  'res.headers["set-cookie"]',
  ...SECRET_FIELDS.flatMap((field) => [field, `*.${field}`]),
];

const SECRET_QUERY = /([?&](?:token|access_token|refresh_token|api_key|key|secret|password)=)[^&#]*/gi;

export function redactUrl(url: string): string {
  return url.replace(SECRET_QUERY, '$1[REDACTED]');
}

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    serializers: {
      req(request: { method: string; url: string; id: string; ip?: string }) {
        return { id: request.id, method: request.method, url: redactUrl(request.url), ip: request.ip };
      },
    },
  };
}
