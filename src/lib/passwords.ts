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
 * without a password) it still spends one scrypt so that the answer time does not reveal which.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  decoyHash ??= hashPassword(randomBytes(16).toString('hex'));
  const [scheme, n, r, p, salt, expected] = (stored ?? (await decoyHash)).split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !expected) return false;
  const key = await derive(password, Buffer.from(salt, 'base64url'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  const matches = timingSafeEqual(key, Buffer.from(expected, 'base64url'));
  return stored !== null && matches;
}
