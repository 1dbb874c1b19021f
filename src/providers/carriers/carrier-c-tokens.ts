/**
 * carrier_c's JWTs, both ways: the RS256 token we sign with the application's private key for each
 * request, and the HS256 token (keyed by the account's signature secret, `payload_hash` = SHA-256 of
 * the body) on each webhook it sends us
 * (developer.vonage.com/en/getting-started/concepts/webhooks#decoding-signed-webhooks). Apart from
 * the adapter because key handling and signature checks are their own concern, tested through it.
 */
import { createHmac, createPrivateKey, type KeyObject, randomUUID } from 'node:crypto';
import { decodeJwt, SignJWT } from 'jose';
import { safeEqual, sha256Hex } from '../../lib/crypto.js';
import { ProviderError } from '../errors.js';
import type { CarrierCredentials, IncomingWebhook } from './types.js';

const PROVIDER = 'carrier_c';
/** Lifetime of the JWT we sign for one request. */
const REQUEST_TOKEN_SECONDS = 300;
/** Oldest `iat` accepted on a signed webhook. */
const WEBHOOK_MAX_AGE_SECONDS = 300;
/** How far a webhook's `iat` may be ahead of our clock. */
const WEBHOOK_CLOCK_SKEW_SECONDS = 60;

/** A fresh RS256 JWT for one request, signed with the application's private key. */
export async function requestToken(credentials: CarrierCredentials): Promise<string> {
  const applicationId = credentials.application_id;
  if (!applicationId || !credentials.private_key) {
    throw new ProviderError(`${PROVIDER} credentials need an application_id and a private_key`, {
      provider: PROVIDER,
      retryable: false,
    });
  }
  const key = privateKey(credentials.private_key);
  return new SignJWT({ application_id: applicationId })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
    .setIssuedAt()
    .setExpirationTime(`${REQUEST_TOKEN_SECONDS}s`)
    .setJti(randomUUID())
    .sign(key);
}

/**
 * Whether a webhook carries a valid HS256 JWT of the account's signature secret, over this body,
 * issued within the last five minutes and, when it names an application, naming ours. Without a
 * signature secret nothing verifies. (Synchronous, as the adapter interface is, and jose verifies
 * only asynchronously: the HMAC is checked with node:crypto; jose signs our request tokens.)
 */
export function webhookSignatureValid(credentials: CarrierCredentials, webhook: IncomingWebhook): boolean {
  const secret = credentials.signature_secret;
  const token = bearer(webhook);
  if (!secret || !token) return false;
  const claims = verifyHs256(token, secret);
  if (!claims) return false;
  return claimsAccepted(claims, credentials, webhook.rawBody);
}

/** The application a webhook's (not yet verified) token names. */
export function unverifiedApplicationId(webhook: IncomingWebhook): string | undefined {
  const token = bearer(webhook);
  if (!token) return undefined;
  try {
    const claims = decodeJwt(token);
    return typeof claims.application_id === 'string' ? claims.application_id : undefined;
  } catch {
    return undefined;
  }
}

/** The RSA private key of a PEM (PKCS#8 or PKCS#1); a pasted key's literal `\n` are line breaks. */
function privateKey(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem.includes('\\n') ? pem.replace(/\\n/g, '\n') : pem);
  } catch (error) {
    throw new ProviderError(`${PROVIDER} private_key is not a readable PEM private key`, {
      provider: PROVIDER,
      retryable: false,
      cause: error,
    });
  }
  if (key.asymmetricKeyType !== 'rsa') {
    throw new ProviderError(`${PROVIDER} private_key must be an RSA key (got ${key.asymmetricKeyType})`, {
      provider: PROVIDER,
      retryable: false,
    });
  }
  return key;
}

/** Verifies a compact HS256 JWS synchronously; its claims, or undefined when it is not valid. */
function verifyHs256(token: string, secret: string): Record<string, unknown> | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const [header, payload, signature] = parts as [string, string, string];
  let protectedHeader: unknown;
  let claims: unknown;
  try {
    protectedHeader = JSON.parse(Buffer.from(header, 'base64url').toString('utf8'));
    claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!isRecord(protectedHeader) || protectedHeader.alg !== 'HS256' || protectedHeader.crit !== undefined) {
    return undefined;
  }
  if (!isRecord(claims)) return undefined;
  const expected = createHmac('sha256', secret).update(`${header}.${payload}`, 'utf8').digest('base64url');
  if (!safeEqual(expected, signature)) return undefined;
  return claims;
}

/** The claims checks shared by both verifiers: freshness, payload hash, application. */
function claimsAccepted(
  claims: Record<string, unknown>,
  credentials: CarrierCredentials,
  rawBody: string,
): boolean {
  const now = Math.floor(Date.now() / 1000);
  const iat = claims.iat;
  if (typeof iat !== 'number' || !Number.isFinite(iat)) return false;
  if (now - iat > WEBHOOK_MAX_AGE_SECONDS || iat - now > WEBHOOK_CLOCK_SKEW_SECONDS) return false;
  if (typeof claims.exp === 'number' && claims.exp <= now) return false;
  if (typeof claims.nbf === 'number' && claims.nbf > now) return false;
  if (typeof claims.payload_hash !== 'string') return false;
  if (!safeEqual(claims.payload_hash.toLowerCase(), sha256Hex(rawBody))) return false;
  const application = claims.application_id;
  if (application !== undefined && application !== credentials.application_id) return false;
  return true;
}

function bearer(webhook: IncomingWebhook): string | undefined {
  const value = header(webhook, 'authorization');
  const match = value ? /^Bearer\s+(\S+)\s*$/i.exec(value) : null;
  return match?.[1];
}

function header(webhook: IncomingWebhook, name: string): string | undefined {
  for (const [key, value] of Object.entries(webhook.headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
