/**
 * Answers the HTTP layer's questions about credentials (see http/auth.ts) from the database, through
 * short-lived caches that `IdentityChanges` empties the moment a user's rights change.
 */
import type { Db } from '../../db/client.js';
import { takeRateWindow } from '../../db/rate-windows.js';
import { Tenant } from '../../db/tenant.js';
import { safeEqual, sha256Hex } from '../../lib/crypto.js';
import { loadKeyPrincipal } from '../api-keys/reads.js';
import type { ApiKeyUsage } from '../api-keys/usage.js';
import type { AccessTokens } from './access-tokens.js';
import type { Authenticator, Principal, RateDecision, Via } from './principal.js';
import { type IdentityChanges, PrincipalCache } from './principal-cache.js';
import { loadSessionPrincipal, type PrincipalRow } from './store.js';

interface CachedSession {
  principal: Principal;
  cookieTokenHash: string;
  csrfTokenHash: string;
}

function toPrincipal(
  row: PrincipalRow & { organizationId: number },
  via: Via,
  sessionId: string | null,
  apiKey: Principal['apiKey'],
): Principal {
  return {
    via,
    user: {
      id: row.userId,
      email: row.email,
      firstName: row.firstName,
      lastName: row.lastName,
      verified: row.emailVerifiedAt !== null,
    },
    organization: { id: row.organizationId },
    role: row.role,
    tenant: new Tenant(row.organizationId),
    sessionId,
    apiKey,
  };
}

/** Splits `<session uuid>.<secret>` (refresh tokens and session cookies). */
export function splitSessionToken(value: string): { sessionId: string; secret: string } | null {
  const match = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.([A-Za-z0-9_-]{20,})$/.exec(
    value,
  );
  return match ? { sessionId: match[1]!, secret: match[2]! } : null;
}

export class IdentityAuthenticator implements Authenticator {
  readonly #sessions = new PrincipalCache<CachedSession>();
  readonly #keys = new PrincipalCache<Principal>();

  constructor(
    private readonly db: Db,
    private readonly tokens: AccessTokens,
    private readonly usage: ApiKeyUsage,
    changes: IdentityChanges,
  ) {
    changes.register(this.#sessions);
    changes.register(this.#keys);
  }

  async fromApiKey(secret: string): Promise<Principal | null> {
    const hash = sha256Hex(secret);
    const cached = this.#keys.get(hash);
    if (cached) return cached;
    const row = await loadKeyPrincipal(this.db, hash);
    if (!row) return null;
    const principal = toPrincipal(row, 'api_key', null, {
      id: row.keyId,
      permissions: row.permissions,
      rateLimit: row.rateLimit,
    });
    this.#keys.set(hash, row.userId, principal);
    return principal;
  }

  async fromAccessToken(token: string): Promise<Principal | null> {
    const claims = await this.tokens.verify(token);
    if (!claims) return null;
    const session = await this.#session(claims.sessionId, claims.organizationId, 'jwt');
    if (!session || session.principal.user.id !== claims.userId) return null;
    return session.principal;
  }

  async fromSessionCookie(value: string): Promise<{ principal: Principal; csrfTokenHash: string } | null> {
    const parts = splitSessionToken(value);
    if (!parts) return null;
    const session = await this.#session(parts.sessionId, null, 'cookie');
    if (!session || !safeEqual(sha256Hex(parts.secret), session.cookieTokenHash)) return null;
    return { principal: session.principal, csrfTokenHash: session.csrfTokenHash };
  }

  /** A live session's principal in `organizationId` (a JWT's) or in the session's own organization. */
  async #session(sessionId: string, organizationId: number | null, via: Via): Promise<CachedSession | null> {
    const key = `${via}:${sessionId}:${organizationId ?? ''}`;
    const cached = this.#sessions.get(key);
    if (cached) return cached;
    const row = await loadSessionPrincipal(this.db, sessionId, organizationId);
    if (!row) return null;
    const session = {
      principal: toPrincipal(row, via, sessionId, null),
      cookieTokenHash: row.cookieTokenHash,
      csrfTokenHash: row.csrfTokenHash,
    };
    this.#sessions.set(key, row.userId, session);
    return session;
  }

  /** An API key's `rate_limit` is requests per minute, counted like every other fixed window. */
  takeRateLimit(apiKeyId: number, limit: number): Promise<RateDecision> {
    return takeRateWindow(this.db, `api_key:${apiKeyId}`, limit, 60_000);
  }

  recordApiKeyUse(apiKeyId: number): void {
    this.usage.record(apiKeyId);
  }
}
