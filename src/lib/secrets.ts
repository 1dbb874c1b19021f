/**
 * Credentials at rest: every stored provider secret goes through `SecretBox.seal` (AES-256-GCM with a
 * key derived from SECRET_KEY) and every response shows it through `maskSecret`.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { deriveKey } from './crypto.js';

const VERSION = 'v1';

export class SecretBox {
  readonly #key: Buffer;

  constructor(secretKey: string) {
    this.#key = deriveKey(secretKey, 'secrets-at-rest');
  }

  /** Encrypts `plain` into `v1.<iv>.<tag>.<ciphertext>` (base64url parts). */
  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return [VERSION, iv, cipher.getAuthTag(), body]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
      .join('.');
  }

  /** Decrypts a value made by `seal`; throws when it was tampered with or sealed under another key. */
  open(sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('Not a sealed secret');
    const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString(
      'utf8',
    );
  }

  sealJson(value: unknown): string {
    return this.seal(JSON.stringify(value));
  }

  openJson<T>(sealed: string): T {
    return JSON.parse(this.open(sealed)) as T;
  }
}

/**
 * A secret sent back exactly as an answer showed it (`****1234`, or `****` when it is short): it
 * stands for the stored one. Whether it may is `restoreMasked`'s decision (`secret-paths.ts`).
 */
export function isMasked(value: string): boolean {
  return value.startsWith('****');
}

/** How a stored secret is shown: `****` and its last four characters (all stars when it is short). */
export function maskSecret(plain: string | null | undefined): string | null {
  if (plain === null || plain === undefined || plain === '') return null;
  return plain.length <= 8 ? '****' : `****${plain.slice(-4)}`;
}
