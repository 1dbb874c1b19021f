/**
 * Organization credentials per provider: which fields each one has, which of them are secrets, and
 * how a stored credential is shown (identifiers in clear, secrets masked).
 */
import { CARRIERS, KEYED_VENDORS } from '../../lib/providers.js';
import { maskSecret } from '../../lib/secrets.js';

interface Shape {
  identifiers: readonly string[];
  secrets: readonly string[];
}

const VENDOR_KEY: Shape = { identifiers: [], secrets: ['api_key'] };

export const CREDENTIAL_SHAPES: Record<string, Shape> = {
  carrier_a: { identifiers: ['account_sid'], secrets: ['auth_token'] },
  carrier_b: { identifiers: ['connection_id', 'public_key'], secrets: ['api_key'] },
  carrier_c: { identifiers: ['application_id'], secrets: ['private_key', 'signature_secret'] },
  sip_trunk: { identifiers: ['username'], secrets: ['password'] },
  ...Object.fromEntries(KEYED_VENDORS.map((vendor) => [vendor, VENDOR_KEY])),
};

export type Credential = Record<string, string>;

/** A secret sent back exactly as a response showed it (`****1234`) means "keep the stored one". */
export function isMasked(value: string): boolean {
  return value.startsWith('****');
}

export function maskCredential(provider: string, credential: Credential): Credential {
  const shape = CREDENTIAL_SHAPES[provider];
  const view: Credential = {};
  for (const [field, value] of Object.entries(credential)) {
    view[field] = shape?.secrets.includes(field) ? (maskSecret(value) ?? '') : value;
  }
  return view;
}

/**
 * The credential to store: the incoming fields, where a masked secret keeps the stored value.
 * Returns the name of a masked field that has nothing stored behind it, if any.
 */
export function mergeCredential(
  provider: string,
  incoming: Credential,
  stored: Credential | undefined,
): { credential: Credential; unknownMasked?: string } {
  const shape = CREDENTIAL_SHAPES[provider];
  const credential: Credential = {};
  for (const [field, value] of Object.entries(incoming)) {
    if (shape?.secrets.includes(field) && isMasked(value)) {
      const kept = stored?.[field];
      if (kept === undefined) return { credential, unknownMasked: field };
      credential[field] = kept;
    } else {
      credential[field] = value;
    }
  }
  return { credential };
}

export const CARRIER_IDS = CARRIERS;
