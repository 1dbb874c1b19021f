/**
 * The one place that turns a request into a principal. Four ways in: an API key bearer (`sk_…`), a
 * JWT bearer, the dashboard session cookie (state-changing requests must echo `X-CSRF-Token`), or
 * nothing. Each route's `config.access` (see access.ts) is then enforced here, in a fixed order:
 * credentials (401) → way in, CSRF, verified user, role, API key area (403) → key rate limit (429).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { forbidden, rateLimited, unauthorized } from '../domains/errors.js';
import { type Authenticator, type Principal, SESSION_COOKIE } from '../domains/identity/principal.js';
import { safeEqual, sha256Hex } from '../lib/crypto.js';
import { type Access, levelAllows } from './access.js';

export const CSRF_HEADER = 'x-csrf-token';

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
    /** Status for request validation failures (decisions §2: some operations answer 400). */
    validationStatus?: 400 | 422;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The authenticated caller of a non-public route (the hook guarantees there is one). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthorized();
  return request.principal;
}

export function installAuthentication(app: FastifyInstance, authenticator: Authenticator): void {
  app.decorateRequest('principal', null);

  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) {
      route.config = { ...route.config, access: { public: true } };
    }
    if (!route.config?.access) {
      throw new Error(`Route ${route.method} ${route.url} does not declare config.access`);
    }
  });

  app.addHook('onRequest', async (request, reply) => {
    const access = request.routeOptions.config?.access;
    if (!access || access.public) return; // public routes, and the not-found handler

    const principal = await resolve(request, authenticator);
    if (!principal) throw unauthorized();
    await admit(authenticator, principal, access, request.method, (name, value) => reply.header(name, value));
    request.principal = principal;
  });
}

/**
 * The checks of `access` for an authenticated principal, in the fixed order: way in, verified user,
 * role, API key area (403) → key rate limit (429); a key that passes has its use recorded. Exported
 * so that a WebSocket, which authenticates its own `?token=`, applies exactly the same rules.
 */
export async function admit(
  authenticator: Authenticator,
  principal: Principal,
  access: Exclude<Access, { public: true }>,
  method: string,
  setHeader: (name: string, value: number) => void = () => {},
): Promise<void> {
  if (access.via && !access.via.includes(principal.via)) {
    throw forbidden(
      access.via.includes('api_key')
        ? `This endpoint cannot be used with a ${principal.via === 'cookie' ? 'session cookie' : 'JWT'}`
        : access.via.length === 1 && access.via[0] === 'jwt'
          ? 'This endpoint requires a JWT bearer access token'
          : 'This endpoint requires a signed-in user, not an API key',
    );
  }
  if (access.verified && !principal.user.verified) {
    throw forbidden('Verify your email address first');
  }
  if (access.role === 'admin' && principal.role !== 'admin') {
    throw forbidden('Admin role required');
  }
  const key = principal.apiKey;
  if (key && access.area) {
    const needed = access.level ?? (SAFE_METHODS.has(method) ? 'read' : 'read_write');
    if (!levelAllows(key.permissions[access.area], needed)) {
      throw forbidden(`API key lacks ${needed} permission for ${access.area}`);
    }
  }
  if (key && key.rateLimit !== null) {
    const decision = await authenticator.takeRateLimit(key.id, key.rateLimit);
    setHeader('X-RateLimit-Limit', decision.limit);
    setHeader('X-RateLimit-Remaining', decision.remaining);
    if (!decision.allowed) {
      throw rateLimited('Rate limit exceeded for this API key', decision.retryAfterSeconds);
    }
  }
  if (key) authenticator.recordApiKeyUse(key.id);
}

/** The principal of a bearer token: an API key (`sk_…`) or a JWT access token; 401 when invalid. */
export async function principalFromBearer(authenticator: Authenticator, token: string): Promise<Principal> {
  const principal = token.startsWith('sk_')
    ? await authenticator.fromApiKey(token)
    : await authenticator.fromAccessToken(token);
  if (!principal)
    throw unauthorized(token.startsWith('sk_') ? 'Invalid API key' : 'Invalid or expired token');
  return principal;
}

async function resolve(request: FastifyRequest, authenticator: Authenticator): Promise<Principal | null> {
  const header = request.headers.authorization;
  if (header !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) throw unauthorized('Invalid authorization header');
    return principalFromBearer(authenticator, match[1]);
  }
  const cookie = request.cookies?.[SESSION_COOKIE];
  if (!cookie) return null;
  const session = await authenticator.fromSessionCookie(cookie);
  if (!session) throw unauthorized('Session expired or invalid');
  if (!SAFE_METHODS.has(request.method)) {
    const csrf = request.headers[CSRF_HEADER];
    if (typeof csrf !== 'string' || !safeEqual(sha256Hex(csrf), session.csrfTokenHash)) {
      throw forbidden('Missing or invalid X-CSRF-Token header');
    }
  }
  return session.principal;
}
