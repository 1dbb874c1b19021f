/**
 * The signature of outgoing webhooks (docs/webhooks.md): `X-Switchboard-Signature: v1=<hex>` where
 * `<hex>` is HMAC-SHA256 of `<timestamp>.<raw body>` keyed by the organization's webhook secret (the
 * whole `whsec_…` string, as UTF-8), and `<timestamp>` is `X-Switchboard-Timestamp` (unix seconds).
 * `verifyWebhookSignature` is what a receiver runs; customers may copy it.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_VERSION = 'v1';
export const WEBHOOK_SECRET_PREFIX = 'whsec_';
/** How far a receiver should let the timestamp be from its own clock (both ways), by default. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** A new webhook secret: `whsec_` and 32 random bytes in base64url. */
export function generateWebhookSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** Hex HMAC-SHA256 of `<timestamp>.<body>` keyed by `secret`. */
export function computeSignature(secret: string, timestamp: number | string, body: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}

/** The value of `X-Switchboard-Signature` for one attempt. */
export function signatureHeader(secret: string, timestamp: number, body: string | Buffer): string {
  return `${SIGNATURE_VERSION}=${computeSignature(secret, timestamp, body)}`;
}

/**
 * True when `header` (the `X-Switchboard-Signature` value) carries a `v1` signature of `timestamp`
 * and the raw `body` made with `secret`, and the timestamp lies within `toleranceSeconds` of `nowMs`.
 * The header may list several signatures separated by commas; one matching is enough. Comparisons
 * take constant time.
 */
export function verifyWebhookSignature(
  secret: string,
  timestamp: string | number,
  body: string | Buffer,
  header: string | undefined | null,
  toleranceSeconds: number = DEFAULT_TOLERANCE_SECONDS,
  nowMs: number = Date.now(),
): boolean {
  if (!header || !secret) return false;
  const stamp = String(timestamp).trim();
  if (!/^\d{1,12}$/.test(stamp)) return false;
  if (Math.abs(nowMs / 1000 - Number(stamp)) > toleranceSeconds) return false;
  const expected = Buffer.from(computeSignature(secret, stamp, body), 'hex');
  let valid = false;
  for (const part of header.split(',')) {
    const [version, value] = part.trim().split('=', 2);
    if (version !== SIGNATURE_VERSION || !value || !/^[0-9a-f]{64}$/i.test(value)) continue;
    // No early return: every listed signature is compared.
    if (timingSafeEqual(expected, Buffer.from(value, 'hex'))) valid = true;
  }
  return valid;
}
