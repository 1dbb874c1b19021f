/**
 * The cryptographic primitives under everything else: secrets at rest (SecretBox), how secrets are
 * shown (maskSecret), password hashes, constant-time comparison and random identifiers. Pure
 * functions — no platform is started.
 */
import { describe, expect, it } from 'vitest';
import { deriveKey, randomBase62, randomToken, safeEqual, sha256Hex } from '../src/lib/crypto.js';
import { hashPassword, verifyPassword } from '../src/lib/passwords.js';
import { maskSecret, SecretBox } from '../src/lib/secrets.js';

const KEY = 'crypto-test-secret-key-0123456789-abcdefghijklmnop';
const OTHER_KEY = 'another-secret-key-for-the-crypto-tests-9876543210';

/** Flips one bit of one byte of a base64url part, so the decoded bytes really differ. */
function flipByte(part: string, index = 0): string {
  const bytes = Buffer.from(part, 'base64url');
  if (bytes.length === 0) throw new Error('empty part cannot be flipped');
  const at = Math.min(index, bytes.length - 1);
  bytes[at] = bytes[at]! ^ 0x01;
  return bytes.toString('base64url');
}

describe('SecretBox', () => {
  const box = new SecretBox(KEY);

  it('opens what it sealed, for plain, unicode, long and empty text', () => {
    for (const plain of [
      'sk-live-abcdefghijklmnop1234',
      'pässwörd — ключ — 秘密 — 🔑',
      'x'.repeat(10_000),
      '',
    ]) {
      const sealed = box.seal(plain);
      expect(box.open(sealed)).toBe(plain);
    }
  });

  it('seals into v1.<iv>.<tag>.<ciphertext> with no trace of the plain text', () => {
    const plain = 'auth-token-0123456789abcdef';
    const sealed = box.seal(plain);
    const parts = sealed.split('.');
    expect(parts).toHaveLength(4);
    expect(parts[0]).toBe('v1');
    expect(Buffer.from(parts[1]!, 'base64url')).toHaveLength(12);
    expect(Buffer.from(parts[2]!, 'base64url')).toHaveLength(16);
    for (const part of parts.slice(1)) expect(part).toMatch(/^[A-Za-z0-9_-]*$/);
    expect(sealed).not.toContain(plain);
    expect(sealed).not.toContain(Buffer.from(plain).toString('base64url'));
  });

  it('seals the same text differently every time (random IV)', () => {
    const sealed = new Set(Array.from({ length: 20 }, () => box.seal('same text')));
    expect(sealed.size).toBe(20);
    for (const value of sealed) expect(box.open(value)).toBe('same text');
  });

  it('a box with another key cannot open it', () => {
    const sealed = box.seal('carrier auth token');
    expect(() => new SecretBox(OTHER_KEY).open(sealed)).toThrow();
    // The same key again (a restarted server) can.
    expect(new SecretBox(KEY).open(sealed)).toBe('carrier auth token');
  });

  it('throws when any part was tampered with', () => {
    const sealed = box.seal('a secret worth protecting');
    const [version, iv, tag, body] = sealed.split('.') as [string, string, string, string];
    const tampered = [
      ['v2', iv, tag, body],
      ['', iv, tag, body],
      [version, flipByte(iv), tag, body],
      [version, flipByte(iv, 11), tag, body],
      [version, iv, flipByte(tag), body],
      [version, iv, flipByte(tag, 15), body],
      [version, iv, tag, flipByte(body)],
      [version, iv, tag, flipByte(body, 1000)],
      [version, iv, tag, body.slice(0, -4)],
      [version, iv, tag, `${body}AAAA`],
      [version, iv, tag.slice(0, 8), body],
    ].map((parts) => parts.join('.'));
    for (const value of tampered) {
      expect(value).not.toBe(sealed);
      expect(() => box.open(value), value).toThrow();
    }
  });

  it('throws for values that are not sealed secrets', () => {
    for (const value of ['', 'plain text', 'v1', 'v1.a', 'v1.a.b', 'v1..', 'v1...']) {
      expect(() => box.open(value), JSON.stringify(value)).toThrow();
    }
  });

  it('seals and opens JSON values', () => {
    const value = { account_sid: 'AC123', auth_token: 'tok-secret', nested: { n: 1, list: [true, null] } };
    const sealed = box.sealJson(value);
    expect(sealed).not.toContain('tok-secret');
    expect(box.openJson(sealed)).toEqual(value);
  });
});

describe('maskSecret', () => {
  it('shows four stars and the last four characters', () => {
    expect(maskSecret('sk-abcdefghijkl1234')).toBe('****1234');
    expect(maskSecret('123456789')).toBe('****6789');
  });

  it('shows only stars for short values, so they cannot be read back', () => {
    for (const short of ['a', 'abcd', 'abcdefgh']) {
      expect(maskSecret(short)).toBe('****');
    }
  });

  it('shows nothing for empty or missing values', () => {
    expect(maskSecret('')).toBeNull();
    expect(maskSecret(null)).toBeNull();
    expect(maskSecret(undefined)).toBeNull();
  });
});

describe('password hashing', () => {
  it('hashes with scrypt into a self-describing format', async () => {
    const hash = await hashPassword('correct horse battery staple');
    expect(hash.startsWith('scrypt$')).toBe(true);
    expect(hash).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{86}$/);
    expect(hash).not.toContain('correct horse');
  });

  it('verifies the right password and refuses a wrong one', async () => {
    const hash = await hashPassword('correct horse battery staple');
    await expect(verifyPassword('correct horse battery staple', hash)).resolves.toBe(true);
    await expect(verifyPassword('correct horse battery stapl', hash)).resolves.toBe(false);
    await expect(verifyPassword('Correct horse battery staple', hash)).resolves.toBe(false);
    await expect(verifyPassword('', hash)).resolves.toBe(false);
  });

  it('salts every hash: the same password hashes differently, and each verifies', async () => {
    const [a, b] = await Promise.all([hashPassword('same password'), hashPassword('same password')]);
    expect(a).not.toBe(b);
    await expect(verifyPassword('same password', a)).resolves.toBe(true);
    await expect(verifyPassword('same password', b)).resolves.toBe(true);
  });

  it('treats canonically equal unicode passwords as equal (NFKC)', async () => {
    const composed = 'caf\u00e9 secret';
    const decomposed = 'cafe\u0301 secret';
    expect(composed).not.toBe(decomposed);
    const hash = await hashPassword(composed);
    await expect(verifyPassword(decomposed, hash)).resolves.toBe(true);
  });

  it('returns false when there is no stored hash', async () => {
    await expect(verifyPassword('anything', null)).resolves.toBe(false);
    await expect(verifyPassword('', null)).resolves.toBe(false);
  });

  it('returns false, and never throws, for a stored hash that is not a valid scrypt hash', async () => {
    const hash = await hashPassword('pw');
    const [, n, r, p, salt, key] = hash.split('$') as [string, string, string, string, string, string];
    const malformed = [
      '',
      'garbage',
      `bcrypt$${n}$${r}$${p}$${salt}$${key}`,
      `scrypt$${n}$${r}$${p}$${salt}`,
      `scrypt$${n}$${r}$${p}$${salt}$AAAA`, // truncated derived key
      `scrypt$abc$${r}$${p}$${salt}$${key}`, // non-numeric parameter
    ];
    for (const stored of malformed) {
      await expect(verifyPassword('pw', stored), stored.slice(0, 40)).resolves.toBe(false);
    }
  });
});

describe('safeEqual', () => {
  it('is true only for identical strings', () => {
    expect(safeEqual('token-value', 'token-value')).toBe(true);
    expect(safeEqual('', '')).toBe(true);
    expect(safeEqual('ключ🔑', 'ключ🔑')).toBe(true);
    expect(safeEqual('token-value', 'token-valuf')).toBe(false);
    expect(safeEqual('token-value', 'Token-value')).toBe(false);
  });

  it('is false for different lengths, prefixes and the empty string', () => {
    expect(safeEqual('token', 'token-value')).toBe(false);
    expect(safeEqual('token-value', 'token')).toBe(false);
    expect(safeEqual('', 'x')).toBe(false);
    expect(safeEqual('x', '')).toBe(false);
  });
});

describe('random identifiers', () => {
  it('randomBase62 yields exactly the requested number of base62 characters', () => {
    for (const length of [0, 1, 12, 32, 100]) {
      const value = randomBase62(length);
      expect(value).toHaveLength(length);
      expect(value).toMatch(/^[0-9A-Za-z]*$/);
    }
  });

  it('randomBase62 draws from the whole alphabet and does not repeat itself', () => {
    const sample = randomBase62(20_000);
    expect(sample).toMatch(/^[0-9A-Za-z]{20000}$/);
    // 20,000 uniform draws over 62 symbols: every symbol shows up (chance of a miss is ~1e-140).
    expect(new Set(sample).size).toBe(62);
    const values = new Set(Array.from({ length: 200 }, () => randomBase62(32)));
    expect(values.size).toBe(200);
  });

  it('randomToken is URL-safe and carries the requested entropy', () => {
    expect(randomToken()).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(randomToken(48), 'base64url')).toHaveLength(48);
    expect(randomToken()).not.toBe(randomToken());
  });
});

describe('hashing and key derivation', () => {
  it('sha256Hex is the hex SHA-256 digest', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('deriveKey gives a stable 32-byte key per purpose and per secret', () => {
    const a = deriveKey(KEY, 'secrets-at-rest');
    expect(a).toHaveLength(32);
    expect(deriveKey(KEY, 'secrets-at-rest').equals(a)).toBe(true);
    expect(deriveKey(KEY, 'jwt-access-token').equals(a)).toBe(false);
    expect(deriveKey(OTHER_KEY, 'secrets-at-rest').equals(a)).toBe(false);
  });
});
