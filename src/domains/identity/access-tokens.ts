/** JWT access tokens (HS256, key derived from SECRET_KEY) naming the user, organization, role and session. */
import { errors, jwtVerify, SignJWT } from 'jose';
import type { Role } from '../../http/access.js';
import { deriveKey } from '../../lib/crypto.js';

const ISSUER = 'switchboard';
const AUDIENCE = 'switchboard-api';

export interface AccessClaims {
  userId: number;
  organizationId: number;
  role: Role;
  sessionId: string;
}

export class AccessTokens {
  readonly #key: Uint8Array;

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
      return { userId, organizationId: org, role, sessionId: sid };
    } catch (error) {
      if (error instanceof errors.JOSEError) return null;
      throw error;
    }
  }
}
