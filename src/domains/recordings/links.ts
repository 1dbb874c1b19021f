/**
 * Signed, expiring recording URLs: `{PUBLIC_URL}/api/v1/recordings/{call_id}?expires=…&signature=…`,
 * given in the end-of-call webhook so a receiver can fetch the audio without credentials. The
 * signature is an HMAC-SHA256 over the call id and the expiry (Unix seconds) under a key derived from
 * SECRET_KEY for this purpose only; changing either, or waiting past the expiry, makes it worthless.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKey } from '../../lib/crypto.js';

export type LinkCheck = 'valid' | 'expired' | 'invalid';

export class RecordingLinks {
  readonly #key: Buffer;

  constructor(
    secretKey: string,
    private readonly publicUrl: string,
    /** How long a URL stays valid (seconds). */
    private readonly ttlSeconds: number,
  ) {
    this.#key = deriveKey(secretKey, 'recording-url');
  }

  #sign(callId: number, expires: number): string {
    return createHmac('sha256', this.#key).update(`${callId}.${expires}`).digest('base64url');
  }

  /** The signed URL of a call's recording, valid for the configured time from `nowMs`. */
  url(callId: number, nowMs = Date.now()): string {
    const expires = Math.floor(nowMs / 1000) + this.ttlSeconds;
    return `${this.publicUrl}/api/v1/recordings/${callId}?expires=${expires}&signature=${this.#sign(callId, expires)}`;
  }

  /** The address its owner fetches it at, with credentials. */
  ownerUrl(callId: number): string {
    return `${this.publicUrl}/api/v1/calls/${callId}/recording`;
  }

  check(callId: number, expires: number, signature: string, nowMs = Date.now()): LinkCheck {
    const expected = Buffer.from(this.#sign(callId, expires));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
    return expires * 1000 <= nowMs ? 'expired' : 'valid';
  }
}
