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
  'signature_secret',
  'webhook_secret',
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

/** Path parameters that carry a credential (e.g. the invitation token in /users/invitation/:token). */
const SECRET_PARAMS = ['token'];

export function redactUrl(url: string, params?: Record<string, unknown>): string {
  let redacted = url.replace(SECRET_QUERY, '$1[REDACTED]');
  for (const name of SECRET_PARAMS) {
    const value = params?.[name];
    if (typeof value === 'string' && value.length > 0) {
      redacted = redacted.split(encodeURIComponent(value)).join('[REDACTED]').split(value).join('[REDACTED]');
    }
  }
  return redacted;
}

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    serializers: {
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
