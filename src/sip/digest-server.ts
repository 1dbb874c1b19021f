/**
 * HTTP Digest for inbound SIP requests (RFC 3261 §22.4, RFC 2617, RFC 8760): the challenge we send,
 * stateless nonces, and verifying the Authorization a peer answers with.
 *
 * Design choices:
 * - Nonces carry their own proof: base64url of an 8-byte issue time, 8 random bytes and the first 16
 *   bytes of an HMAC-SHA256 over both under a server secret. No table of issued nonces is kept, so
 *   any process holding the secret can check one, and a restart loses nothing. An expired nonce whose
 *   signature is good is `stale`, so the peer is re-challenged with `stale=true` and retries without
 *   asking its user (RFC 2617 §3.2.1). Within its lifetime a nonce can be replayed: keep lifetimes
 *   short (default five minutes); tracking `nc` per nonce would need state we chose not to keep.
 * - Verification compares the response in constant time (`safeEqual`), and an unknown user is
 *   checked against a throw-away password so that the answer takes the same work either way.
 * - The digest-uri is checked against the Request-URI only when the caller passes `uri`: sipp's own
 *   client writes `sip:remote_ip:port` there instead of the Request-URI (sip-research.md §5).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { safeEqual } from '../lib/crypto.js';
import { type DigestAlgorithm, digestResponse, parseAuthHeader, supportedAlgorithm } from './digest.js';
import { quote, SipParseError } from './syntax.js';

export interface DigestAuthorization {
  username: string;
  realm: string;
  nonce: string;
  uri: string;
  response: string;
  /** As written; MD5 when absent. */
  algorithm: string;
  qop?: string;
  nc?: string;
  cnonce?: string;
  opaque?: string;
}

/** Reads a `Digest username=…, …` Authorization or Proxy-Authorization value. */
export function parseAuthorization(value: string): DigestAuthorization {
  const [credentials, ...others] = parseAuthHeader(value);
  if (!credentials || others.length > 0 || credentials.scheme.toLowerCase() !== 'digest') {
    throw new SipParseError('bad-auth', 'not one set of Digest credentials');
  }
  const { params } = credentials;
  const required = (name: string): string => {
    const found = params.get(name);
    if (found === undefined) throw new SipParseError('bad-auth', `Digest credentials without ${name}`);
    return found;
  };
  const authorization: DigestAuthorization = {
    username: required('username'),
    realm: required('realm'),
    nonce: required('nonce'),
    uri: required('uri'),
    response: required('response'),
    algorithm: params.get('algorithm') ?? 'MD5',
  };
  for (const name of ['qop', 'nc', 'cnonce', 'opaque'] as const) {
    const found = params.get(name);
    if (found !== undefined) authorization[name] = found;
  }
  return authorization;
}

export type NonceCheck = 'valid' | 'stale' | 'invalid';

export interface VerifyOptions {
  method: string;
  realm: string;
  /** The user's password, or undefined for an unknown user. */
  password: (username: string) => string | undefined;
  checkNonce: (nonce: string) => NonceCheck;
  /** When given, the credentials' digest-uri must be exactly this Request-URI. */
  uri?: string;
  /** The request body, for qop=auth-int. */
  body?: Buffer;
}

/**
 * Why credentials were refused — for logs and metrics. Answer every failure the same way (a fresh
 * challenge, or 403), so that a peer cannot tell an unknown user from a wrong password.
 */
export type VerifyFailure =
  | 'malformed'
  | 'realm'
  | 'algorithm'
  | 'uri'
  | 'nonce'
  | 'unknown-user'
  | 'response'
  | 'stale';

export type VerifyResult = { ok: true; username: string } | { ok: false; reason: VerifyFailure };

/**
 * Checks a request's Authorization value. `stale` means the credentials were right but the nonce has
 * expired: challenge again with `stale=true`. Any other failure deserves a fresh challenge (or 403).
 */
export function verifyAuthorization(value: string, options: VerifyOptions): VerifyResult {
  let credentials: DigestAuthorization;
  try {
    credentials = parseAuthorization(value);
  } catch (error) {
    if (error instanceof SipParseError) return { ok: false, reason: 'malformed' };
    throw error;
  }
  const algorithm = supportedAlgorithm(credentials.algorithm);
  const qop = credentials.qop?.toLowerCase();
  if (qop !== undefined && qop !== 'auth' && qop !== 'auth-int') return { ok: false, reason: 'malformed' };
  if (qop !== undefined && (credentials.nc === undefined || credentials.cnonce === undefined)) {
    return { ok: false, reason: 'malformed' };
  }
  if (credentials.realm !== options.realm) return { ok: false, reason: 'realm' };
  if (!algorithm) return { ok: false, reason: 'algorithm' };
  if (options.uri !== undefined && credentials.uri !== options.uri) return { ok: false, reason: 'uri' };
  const nonce = options.checkNonce(credentials.nonce);
  if (nonce === 'invalid') return { ok: false, reason: 'nonce' };
  const password = options.password(credentials.username);
  const expected = digestResponse({
    algorithm,
    username: credentials.username,
    realm: credentials.realm,
    password: password ?? randomBytes(16).toString('hex'),
    method: options.method,
    uri: credentials.uri,
    nonce: credentials.nonce,
    ...(qop === undefined ? {} : { qop, nc: credentials.nc as string }),
    ...(credentials.cnonce === undefined ? {} : { cnonce: credentials.cnonce }),
    ...(options.body ? { body: options.body } : {}),
  });
  const matches = safeEqual(expected, credentials.response.toLowerCase());
  if (password === undefined) return { ok: false, reason: 'unknown-user' };
  if (!matches) return { ok: false, reason: 'response' };
  if (nonce === 'stale') return { ok: false, reason: 'stale' };
  return { ok: true, username: credentials.username };
}

export interface ChallengeOptions {
  realm: string;
  nonce: string;
  algorithm?: DigestAlgorithm;
  /** Default `auth`; `null` sends an RFC 2069 challenge without qop. */
  qop?: 'auth' | 'auth-int' | 'auth,auth-int' | null;
  opaque?: string;
  stale?: boolean;
}

/** A WWW-Authenticate / Proxy-Authenticate value (one per algorithm offered, strongest first). */
export function formatChallenge(options: ChallengeOptions): string {
  const fields = [
    `realm=${quote(options.realm)}`,
    `nonce=${quote(options.nonce)}`,
    `algorithm=${options.algorithm ?? 'MD5'}`,
  ];
  const qop = options.qop === undefined ? 'auth' : options.qop;
  if (qop !== null) fields.push(`qop="${qop}"`);
  if (options.opaque !== undefined) fields.push(`opaque=${quote(options.opaque)}`);
  if (options.stale) fields.push('stale=true');
  return `Digest ${fields.join(', ')}`;
}

export interface NonceIssuer {
  issue(): string;
  check(nonce: string): NonceCheck;
}

const NONCE_BYTES = 32;
const SIGNED_BYTES = 16;

/** Stateless HMAC-signed nonces that expire after `lifetimeMs` (default five minutes). */
export function createNonceIssuer(options: {
  secret: Buffer;
  lifetimeMs?: number;
  now?: () => number;
}): NonceIssuer {
  if (options.secret.length < 16) throw new RangeError('the nonce secret needs at least 16 bytes');
  const lifetime = options.lifetimeMs ?? 5 * 60_000;
  const now = options.now ?? Date.now;
  const sign = (signed: Buffer) =>
    createHmac('sha256', options.secret)
      .update(signed)
      .digest()
      .subarray(0, NONCE_BYTES - SIGNED_BYTES);
  return {
    issue() {
      const signed = Buffer.alloc(SIGNED_BYTES);
      signed.writeBigUInt64BE(BigInt(Math.floor(now())));
      randomBytes(8).copy(signed, 8);
      return Buffer.concat([signed, sign(signed)]).toString('base64url');
    },
    check(nonce) {
      const bytes = Buffer.from(nonce, 'base64url');
      if (bytes.length !== NONCE_BYTES || bytes.toString('base64url') !== nonce) return 'invalid';
      const signed = bytes.subarray(0, SIGNED_BYTES);
      if (!timingSafeEqual(sign(signed), bytes.subarray(SIGNED_BYTES))) return 'invalid';
      const age = now() - Number(signed.readBigUInt64BE());
      if (age < -1000) return 'invalid';
      return age > lifetime ? 'stale' : 'valid';
    },
  };
}
