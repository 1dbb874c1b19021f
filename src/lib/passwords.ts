/**
 * Password hashing with scrypt (memory-hard, built into Node). The stored form names its parameters
 * so they can be raised later without invalidating existing hashes.
 */
import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from 'node:crypto';

const KEY_LENGTH = 64;
const DEFAULT_PARAMS = { N: 16_384, r: 8, p: 1 } as const;

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(
      password.normalize('NFKC'),
      salt,
      KEY_LENGTH,
      { ...options, maxmem: 64 * 1024 * 1024 },
      (error, key) => (error ? reject(error) : resolve(key)),
    );
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, DEFAULT_PARAMS);
  const { N, r, p } = DEFAULT_PARAMS;
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

/** A hash of a random password, used to spend the same time when the account does not exist. */
let decoyHash: Promise<string> | undefined;

/**
 * Checks `password` against `stored` in constant time. With `stored` null (no such user, or a user
 * without a password) or malformed, it still spends one scrypt — against a decoy hash — so that the
 * answer time does not reveal which, and answers false.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  decoyHash ??= hashPassword(randomBytes(16).toString('hex'));
  const own = parseHash(stored);
  const target = own ?? parseHash(await decoyHash)!;
  const key = await derive(password, target.salt, target.params);
  return timingSafeEqual(key, target.expected) && own !== undefined;
}

interface ParsedHash {
  params: { N: number; r: number; p: number };
  salt: Buffer;
  expected: Buffer;
}

function parseHash(stored: string | null): ParsedHash | undefined {
  const [scheme, n, r, p, salt, expected] = (stored ?? '').split('$');
  if (scheme !== 'scrypt' || !salt || !expected) return undefined;
  const params = { N: Number(n), r: Number(r), p: Number(p) };
  if (![params.N, params.r, params.p].every((v) => Number.isInteger(v) && v > 0)) return undefined;
  // N must be a power of two, and the memory it needs must stay within what `derive` allows.
  if ((params.N & (params.N - 1)) !== 0 || 128 * params.N * params.r > 32 * 1024 * 1024) return undefined;
  const expectedKey = Buffer.from(expected, 'base64url');
  if (expectedKey.length !== KEY_LENGTH) return undefined;
  return { params, salt: Buffer.from(salt, 'base64url'), expected: expectedKey };
}
