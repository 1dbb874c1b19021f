/**
 * HTTP Digest authentication as SIP uses it (RFC 3261 §22.4, RFC 2617, RFC 7616's hashes adopted for
 * SIP by RFC 8760) — the client side: read the challenges of a 401 (`WWW-Authenticate`) or a 407
 * (`Proxy-Authenticate`), pick one, and compute the `Authorization` / `Proxy-Authorization` value.
 * digest-server.ts verifies inbound credentials with the same arithmetic.
 *
 * Design choices:
 * - Algorithms MD5, SHA-256 and SHA-512-256, each also `-sess` (node:crypto has all three hashes).
 *   Tokens are matched case-insensitively.
 * - Choosing among several challenges: RFC 8760 §2.4 says to use the topmost supported one "unless a
 *   local policy dictates otherwise". Our policy prefers the strongest hash (SHA-512-256 > SHA-256 >
 *   MD5) and, among equals, the topmost: a server listing MD5 first for old phones still gets SHA-256
 *   from us.
 * - qop: `auth` when offered, else `auth-int` (hashing the body), else the RFC 2069 form without
 *   qop, nc and cnonce (still common on trunks).
 * - `nc` counts the uses of each nonce (`NonceCounter`, bounded); the cnonce is random per answer.
 * - The header value parser reads several challenges in one value and takes unquoted values leniently
 *   (up to a comma or whitespace), as some servers leave a base64 nonce unquoted.
 */
import { createHash, randomBytes } from 'node:crypto';
import { quote, Scanner, SipParseError, unquote } from './syntax.js';

export type DigestAlgorithm =
  | 'MD5'
  | 'MD5-sess'
  | 'SHA-256'
  | 'SHA-256-sess'
  | 'SHA-512-256'
  | 'SHA-512-256-sess';

/** By lower-cased token (a Map, so that a token such as `constructor` finds nothing). */
const HASHES = new Map<string, { name: DigestAlgorithm; hash: string; strength: number }>();
for (const [name, hash, strength] of [
  ['MD5', 'md5', 1],
  ['SHA-256', 'sha256', 2],
  ['SHA-512-256', 'sha512-256', 3],
] as const) {
  HASHES.set(name.toLowerCase(), { name, hash, strength });
  HASHES.set(`${name.toLowerCase()}-sess`, { name: `${name}-sess`, hash, strength });
}

/** The canonical spelling of a supported algorithm token, or undefined when unsupported. */
export function supportedAlgorithm(token: string): DigestAlgorithm | undefined {
  return HASHES.get(token.toLowerCase())?.name;
}

export interface AuthChallenge {
  /** As written (`Digest`, `Basic`…). */
  scheme: string;
  /** Parameter values unquoted, by lower-cased name. */
  params: Map<string, string>;
}

/** Reads `scheme param=value, param="value", Scheme2 …` (RFC 7235 §4.1 / RFC 3261 §25.1). */
export function parseAuthHeader(value: string): AuthChallenge[] {
  const scanner = new Scanner(value, 'bad-auth', 'authentication header');
  const found: AuthChallenge[] = [];
  scanner.skipWhitespace();
  while (!scanner.done) {
    const challenge: AuthChallenge = { scheme: scanner.token(), params: new Map() };
    found.push(challenge);
    scanner.skipWhitespace();
    while (!scanner.done) {
      const before = scanner.pos;
      if (scanner.eat(',')) {
        scanner.skipWhitespace();
        continue;
      }
      const name = scanner.token().toLowerCase();
      if (!scanner.eat('=')) {
        scanner.pos = before; // a token without "=": the next challenge's scheme
        break;
      }
      scanner.skipWhitespace();
      let text: string;
      if (scanner.peek() === '"') text = unquote(scanner.quoted());
      else {
        text = scanner.run((code) => code !== 0x2c && code !== 0x20 && code !== 0x09 && code !== 0x22);
        if (text === '') scanner.fail(`empty value of ${name}`);
      }
      if (!challenge.params.has(name)) challenge.params.set(name, text);
      scanner.skipWhitespace();
      if (!scanner.done && scanner.peek() !== ',') scanner.fail('expected ","');
    }
  }
  return found;
}

export interface DigestChallenge {
  realm: string;
  nonce: string;
  opaque?: string;
  /** Canonical spelling when supported, else as written. MD5 when the challenge names none. */
  algorithm: string;
  /** Offered qop tokens, lower-cased; empty for an RFC 2069 challenge. */
  qop: string[];
  stale: boolean;
}

/** The Digest challenges in one WWW-Authenticate / Proxy-Authenticate value (others are skipped). */
export function parseDigestChallenges(value: string): DigestChallenge[] {
  return parseAuthHeader(value)
    .filter((challenge) => challenge.scheme.toLowerCase() === 'digest')
    .map(({ params }) => {
      const realm = params.get('realm');
      const nonce = params.get('nonce');
      if (realm === undefined || nonce === undefined) {
        throw new SipParseError('bad-auth', 'a Digest challenge without realm or nonce');
      }
      const algorithm = params.get('algorithm') ?? 'MD5';
      const challenge: DigestChallenge = {
        realm,
        nonce,
        algorithm: supportedAlgorithm(algorithm) ?? algorithm,
        qop: (params.get('qop') ?? '')
          .split(',')
          .map((token) => token.trim().toLowerCase())
          .filter((token) => token !== ''),
        stale: params.get('stale')?.toLowerCase() === 'true',
      };
      const opaque = params.get('opaque');
      if (opaque !== undefined) challenge.opaque = opaque;
      return challenge;
    });
}

/**
 * The challenge to answer among all the given header values (each a WWW-Authenticate or
 * Proxy-Authenticate field, topmost first): the strongest supported algorithm, then the topmost.
 * Values that do not parse and challenges we cannot answer are skipped; undefined when none is left.
 */
export function chooseChallenge(values: readonly string[]): DigestChallenge | undefined {
  let best: DigestChallenge | undefined;
  let bestStrength = 0;
  for (const value of values) {
    let challenges: DigestChallenge[];
    try {
      challenges = parseDigestChallenges(value);
    } catch (error) {
      if (error instanceof SipParseError) continue;
      throw error;
    }
    for (const challenge of challenges) {
      const strength = HASHES.get(challenge.algorithm.toLowerCase())?.strength ?? 0;
      const answerable =
        challenge.qop.length === 0 || challenge.qop.includes('auth') || challenge.qop.includes('auth-int');
      if (answerable && strength > bestStrength) {
        best = challenge;
        bestStrength = strength;
      }
    }
  }
  return best;
}

export interface DigestInput {
  algorithm: DigestAlgorithm;
  username: string;
  realm: string;
  password: string;
  method: string;
  /** The digest-uri: the Request-URI as sent. */
  uri: string;
  nonce: string;
  /** `auth`, `auth-int`, or undefined for the RFC 2069 form. */
  qop?: 'auth' | 'auth-int';
  /** 8 hex digits; with qop. */
  nc?: string;
  /** With qop and for `-sess`. */
  cnonce?: string;
  /** The message body, for auth-int (empty when absent). */
  body?: Buffer;
}

/** The `response` value, lower-case hex (RFC 2617 §3.2.2, RFC 7616 §3.4.1). */
export function digestResponse(input: DigestInput): string {
  const algorithm = HASHES.get(input.algorithm.toLowerCase());
  if (!algorithm) throw new RangeError(`unsupported digest algorithm ${input.algorithm}`);
  const hash = (data: string | Buffer) => createHash(algorithm.hash).update(data).digest('hex');
  let ha1 = hash(`${input.username}:${input.realm}:${input.password}`);
  if (algorithm.name.endsWith('-sess')) ha1 = hash(`${ha1}:${input.nonce}:${input.cnonce ?? ''}`);
  const ha2 =
    input.qop === 'auth-int'
      ? hash(`${input.method}:${input.uri}:${hash(input.body ?? Buffer.alloc(0))}`)
      : hash(`${input.method}:${input.uri}`);
  if (input.qop === undefined) return hash(`${ha1}:${input.nonce}:${ha2}`);
  return hash(`${ha1}:${input.nonce}:${input.nc ?? ''}:${input.cnonce ?? ''}:${input.qop}:${ha2}`);
}

/** How many times each nonce has been used, for `nc`; forgets the oldest nonces beyond `limit`. */
export class NonceCounter {
  readonly #counts = new Map<string, number>();

  constructor(private readonly limit = 64) {}

  next(nonce: string): number {
    const count = (this.#counts.get(nonce) ?? 0) + 1;
    this.#counts.delete(nonce);
    this.#counts.set(nonce, count);
    if (this.#counts.size > this.limit) this.#counts.delete(this.#counts.keys().next().value as string);
    return count;
  }
}

export const formatNonceCount = (count: number) => count.toString(16).padStart(8, '0');

export interface DigestCredentials {
  username: string;
  password: string;
}

/**
 * The Authorization / Proxy-Authorization value answering `challenge` for one request. `nc` and
 * `cnonce` are given by the caller (`answerChallenge` draws them) so the result is reproducible.
 */
export function digestAuthorization(
  challenge: DigestChallenge,
  credentials: DigestCredentials,
  request: { method: string; uri: string; body?: Buffer },
  counters: { nc: number; cnonce: string },
): string {
  const algorithm = supportedAlgorithm(challenge.algorithm);
  if (!algorithm) throw new RangeError(`unsupported digest algorithm ${challenge.algorithm}`);
  const qop = challenge.qop.includes('auth')
    ? 'auth'
    : challenge.qop.includes('auth-int')
      ? 'auth-int'
      : undefined;
  const nc = formatNonceCount(counters.nc);
  const withCnonce = qop !== undefined || algorithm.endsWith('-sess');
  const response = digestResponse({
    algorithm,
    username: credentials.username,
    realm: challenge.realm,
    password: credentials.password,
    method: request.method,
    uri: request.uri,
    nonce: challenge.nonce,
    ...(qop ? { qop, nc } : {}),
    ...(withCnonce ? { cnonce: counters.cnonce } : {}),
    ...(request.body ? { body: request.body } : {}),
  });
  const fields = [
    `username=${quote(credentials.username)}`,
    `realm=${quote(challenge.realm)}`,
    `nonce=${quote(challenge.nonce)}`,
    `uri=${quote(request.uri)}`,
    `response="${response}"`,
    `algorithm=${algorithm}`,
  ];
  if (withCnonce) fields.push(`cnonce=${quote(counters.cnonce)}`);
  if (qop) fields.push(`qop=${qop}`, `nc=${nc}`);
  if (challenge.opaque !== undefined) fields.push(`opaque=${quote(challenge.opaque)}`);
  return `Digest ${fields.join(', ')}`;
}

/** Which header carries the challenge of a 401 or a 407, and which one carries the answer. */
export function authHeaderNames(status: 401 | 407): {
  challenge: 'WWW-Authenticate' | 'Proxy-Authenticate';
  answer: 'Authorization' | 'Proxy-Authorization';
} {
  return status === 401
    ? { challenge: 'WWW-Authenticate', answer: 'Authorization' }
    : { challenge: 'Proxy-Authenticate', answer: 'Proxy-Authorization' };
}

/**
 * Answers the best of a response's challenges (`values`: its WWW-Authenticate or Proxy-Authenticate
 * fields), counting the nonce's use and drawing a random cnonce. Undefined when none can be answered.
 */
export function answerChallenge(
  values: readonly string[],
  credentials: DigestCredentials,
  request: { method: string; uri: string; body?: Buffer },
  counter: NonceCounter,
): { challenge: DigestChallenge; value: string } | undefined {
  const challenge = chooseChallenge(values);
  if (!challenge) return undefined;
  const counters = { nc: counter.next(challenge.nonce), cnonce: randomBytes(12).toString('base64url') };
  return { challenge, value: digestAuthorization(challenge, credentials, request, counters) };
}
