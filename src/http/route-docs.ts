/**
 * What every documented operation says about itself without its route having to: the errors that
 * follow from how it is reached (credentials, permission area, rate limit) and from its shape (a
 * body may be too large, of a type we do not read, or not JSON), the notes on which credentials it
 * accepts, and a unique operationId — checked as each route is registered, so none can be missing.
 */
import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import type { Via } from '../domains/identity/principal.js';
import type { Access } from './access.js';
import { errors, STANDARD_DESCRIPTIONS } from './responses.js';

/** Methods whose requests Fastify reads a body for (any of them may carry one, declared or not). */
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const SAFE_METHODS = new Set(['GET', 'HEAD']);
const CAMEL_CASE = /^[a-z][a-zA-Z0-9]*$/;

const VIA_NAMES = { api_key: 'API key', jwt: 'JWT', cookie: 'session cookie' } as const;
/** auth.ts's CSRF_HEADER as the docs spell it (header names are case-insensitive). */
const CSRF_DISPLAY = 'X-CSRF-Token';

/**
 * Installs the onRoute hook that documents every route registered after it. A documented route
 * (not `schema.hide`) without an operationId, or with one another route has, fails the start.
 */
export function installRouteDocs(app: FastifyInstance): void {
  const operations = new Map<string, string>();
  app.addHook('onRoute', (route) => {
    const declared = route.config?.access;
    if (!declared || route.schema?.hide) return;
    route.schema = documentAccess(
      route.schema ?? {},
      declared,
      route.method,
      route.config?.validationStatus ?? 422,
    );
    checkOperationId(route, operations);
  });
}

/** Fastify's own HEAD copy of a GET route is left out of the document (and shares its operationId). */
function checkOperationId(route: RouteOptions, operations: Map<string, string>): void {
  const methods = [route.method].flat();
  if (methods.every((m) => m === 'HEAD')) return;
  const where = `${methods.join(',')} ${route.url}`;
  const id = (route.schema as { operationId?: unknown } | undefined)?.operationId;
  if (typeof id !== 'string' || !CAMEL_CASE.test(id)) {
    throw new Error(`Route ${where} needs a camelCase schema.operationId (e.g. getAssistant)`);
  }
  const other = operations.get(id);
  if (other && other !== where) throw new Error(`Routes ${other} and ${where} share operationId ${id}`);
  operations.set(id, where);
}

/** Adds what a route requires, and the errors that follow from it and from its shape, to its operation. */
export function documentAccess(
  schema: FastifySchema,
  declared: Access,
  method: string | string[],
  validationStatus: 400 | 422,
): FastifySchema {
  const methods = [method].flat();
  const responses: Record<string, unknown> = { ...(schema.response as Record<string, unknown> | undefined) };
  const add = (more: Record<string, unknown>) => {
    for (const [status, body] of Object.entries(more)) responses[status] ??= body;
  };
  const takesBody = methods.some((m) => BODY_METHODS.has(m));
  // Invalid input answers the route's validation status (422, or 400 where the API says so): a
  // schema's rule, malformed JSON in any body (http/errors.ts), or a value the database refuses.
  if (takesBody || schema.querystring || schema.params) {
    add({
      [validationStatus]: { ...errors(422)[422], description: 'Validation failed (detail lists the issues)' },
    });
  }
  if (takesBody) {
    add(errors({ 413: 'Body larger than the limit (BODY_LIMIT_BYTES)' }));
    add(errors({ 415: `${STANDARD_DESCRIPTIONS[415]}: ${consumesText(schema)}` }));
  }
  if (declared.public) return { ...schema, security: [], response: responses } as FastifySchema;

  const via = declared.via ?? ['api_key', 'jwt', 'cookie'];
  const safe = methods.every((m) => SAFE_METHODS.has(m));
  add(errors(401));
  add(errors({ 403: forbiddenText(declared, via, safe) }));
  if (via.includes('api_key')) add(errors({ 429: 'API key rate limit exceeded (Retry-After says when)' }));

  const notes = [acceptsText(via)];
  if (declared.role) notes.push(`Requires the ${declared.role} role.`);
  if (declared.verified) notes.push('Requires a verified email address.');
  const level = declared.level ?? (safe ? 'read' : 'read_write');
  const area = declared.area && via.includes('api_key') ? declared.area : undefined;
  if (area) notes.push(`API keys need \`${area}: ${level}\`${level === 'read' ? ' (or `read_write`)' : ''}.`);
  if (via.includes('cookie') && !safe) {
    notes.push(`With the session cookie, send \`${CSRF_DISPLAY}\` (the \`csrf_token\` of sign-in) too.`);
  }
  const security: Array<Record<string, string[]>> = [
    ...(via.includes('api_key') || via.includes('jwt') ? [{ bearerAuth: [] }] : []),
    ...(via.includes('cookie') ? [{ cookieAuth: [] }] : []),
  ];
  return {
    ...schema,
    security,
    description: [schema.description, notes.join(' ')].filter(Boolean).join('\n\n'),
    response: responses,
    ...(area ? { 'x-api-key-area': area, 'x-api-key-level': level } : {}),
  } as FastifySchema;
}

/** Which credentials the operation takes, in words. */
function acceptsText(via: readonly Via[]): string {
  const names = via.map((v) => VIA_NAMES[v]).join(', ');
  if (via.length === 1 && via[0] === 'jwt')
    return 'Accepts: JWT. Only a JWT access token: not an API key or the cookie.';
  return via.includes('api_key')
    ? `Accepts: ${names}.`
    : `Accepts: ${names}. A signed-in user: API keys are refused.`;
}

/** The refusals a 403 of this route can be, so the description says which ones apply. */
function forbiddenText(declared: Exclude<Access, { public: true }>, via: readonly Via[], safe: boolean) {
  const reasons: string[] = [];
  if (via.length < 3) reasons.push(`called with other than ${via.map((v) => VIA_NAMES[v]).join(' or ')}`);
  if (declared.verified) reasons.push('email not verified');
  if (declared.role) reasons.push(`not ${declared.role}`);
  if (declared.area && via.includes('api_key')) reasons.push(`API key without ${declared.area} permission`);
  if (via.includes('cookie') && !safe) reasons.push(`cookie without ${CSRF_DISPLAY}`);
  return reasons.length > 0
    ? `${STANDARD_DESCRIPTIONS[403]}: ${reasons.join('; ')}`
    : STANDARD_DESCRIPTIONS[403];
}

/** The media types a body route reads, for its 415's description. */
function consumesText(schema: FastifySchema): string {
  const consumes = (schema as { consumes?: string[] }).consumes;
  return `send ${consumes?.length ? consumes.join(' or ') : 'application/json'}`;
}
