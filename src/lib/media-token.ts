/**
 * Media streams' addresses and tokens: the carrier connects a call's audio to our WebSocket at
 * `/media-stream/{call_id}` and presents a token the way the carrier allows (carrier_a: a stream
 * parameter that arrives in its `start` message). A token names one call of one organization and
 * expires; it is an HS256 JWT under a key derived from SECRET_KEY for this purpose only, so no other
 * token (an access token) passes for it.
 */
import { jwtVerify, SignJWT } from 'jose';
import { deriveKey } from './crypto.js';

const AUDIENCE = 'switchboard-media-stream';

/** The WebSocket form of the public base URL (`https:` → `wss:`, `http:` → `ws:`). */
export function publicSocketBase(publicUrl: string): string {
  return publicUrl.replace(/^http/, 'ws');
}

/** Where a call's media stream connects: `wss://{PUBLIC_URL host}/media-stream/{call_id}`, no query. */
export function mediaStreamUrl(publicUrl: string, callId: number): string {
  return `${publicSocketBase(publicUrl)}/media-stream/${callId}`;
}

export interface MediaClaims {
  callId: number;
  organizationId: number;
}

export class MediaTokens {
  readonly #key: Uint8Array;

  constructor(
    secretKey: string,
    /** How long a call may take to connect its stream after the token is made. */
    private readonly ttlSeconds = 3600,
  ) {
    this.#key = deriveKey(secretKey, 'media-stream-token');
  }

  issue(claims: MediaClaims): Promise<string> {
    return new SignJWT({ org: claims.organizationId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(String(claims.callId))
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setExpirationTime(`${this.ttlSeconds}s`)
      .sign(this.#key);
  }

  /** The claims of a valid token for `callId`; undefined for anything else (wrong call, expired, forged). */
  async verify(token: string, callId: number): Promise<MediaClaims | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.#key, { audience: AUDIENCE, algorithms: ['HS256'] });
      if (payload.sub !== String(callId) || typeof payload.org !== 'number') return undefined;
      return { callId, organizationId: payload.org };
    } catch {
      return undefined;
    }
  }
}
