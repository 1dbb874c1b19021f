/** Small cryptographic primitives shared by identity, secrets at rest and signed webhooks. */
import { createHash, hkdfSync, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A URL-safe random token carrying `bytes` bytes of entropy. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** `length` uniformly random base62 characters (no modulo bias: `randomInt` rejects out-of-range draws). */
export function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/**
 * Compares two strings in time independent of where they differ. Both sides are hashed first so that
 * inputs of different lengths do not return early either.
 */
export function safeEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right) && a.length === b.length;
}

/** Derives an independent 32-byte key for one purpose from the server's SECRET_KEY (HKDF-SHA256). */
export function deriveKey(secretKey: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secretKey, 'switchboard', purpose, 32));
}
