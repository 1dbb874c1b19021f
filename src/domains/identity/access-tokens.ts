/** JWT access tokens (HS256, key derived from SECRET_KEY) naming the user, organization, role and session. */
import { errors, jwtVerify, SignJWT } from 'jose';
import { deriveKey } from '../../lib/crypto.js';
import type { Role } from './principal.js';

const ISSUER = 'switchboard';
const AUDIENCE = 'switchboard-api';

export interface AccessClaims {
  userId: number;
  organizationId: number;
  role: Role;
  sessionId: string;
}

/** Verified tokens kept, so a client repeating its token skips the HMAC (WebCrypto is slow per call). */
const VERIFIED_CACHE_SIZE = 10_000;

export class AccessTokens {
  readonly #key: Uint8Array;
  /** Exact token string → its claims and expiry (ms). A token's claims cannot change before it expires. */
  readonly #verified = new Map<string, { claims: AccessClaims; expiresAt: number }>();

  constructor(
    secretKey: string,
    readonly ttlSeconds: number,
  ) {
    this.#key = deriveKey(secretKey, 'jwt-access-token');
  }

  async issue(claims: AccessClaims): Promise<string> {
    return new SignJWT({ org: claims.organizationId, role: claims.role, sid: claims.sessionId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(String(claims.userId))
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(`${this.ttlSeconds}s`)
      .sign(this.#key);
  }

  /** The claims of a valid, unexpired token signed by this server; null for anything else. */
  async verify(token: string): Promise<AccessClaims | null> {
    const known = this.#verified.get(token);
    if (known) {
      if (known.expiresAt > Date.now()) return known.claims;
      this.#verified.delete(token);
    }
    const verified = await this.#verifySignature(token);
    if (!verified) return null;
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) this.#verified.clear();
    this.#verified.set(token, verified);
    return verified.claims;
  }

  async #verifySignature(token: string): Promise<{ claims: AccessClaims; expiresAt: number } | null> {
    try {
      const { payload } = await jwtVerify(token, this.#key, {
        issuer: ISSUER,
        audience: AUDIENCE,
        algorithms: ['HS256'],
      });
      const userId = Number(payload.sub);
      const { org, role, sid } = payload as { org?: unknown; role?: unknown; sid?: unknown };
      if (!Number.isInteger(userId) || typeof org !== 'number' || typeof sid !== 'string') return null;
      if (role !== 'admin' && role !== 'user') return null;
      if (typeof payload.exp !== 'number') return null;
      return { claims: { userId, organizationId: org, role, sessionId: sid }, expiresAt: payload.exp * 1000 };
    } catch (error) {
      if (error instanceof errors.JOSEError) return null;
      throw error;
    }
  }
}
