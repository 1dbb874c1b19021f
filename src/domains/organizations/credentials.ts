/**
 * Organization credentials per provider: which fields each one has, which of them are secrets, and
 * how a stored credential is shown (identifiers in clear, secrets masked).
 */

import { type MaskedRefusal, restoreMasked } from '../../lib/secret-paths.js';
import { maskSecret } from '../../lib/secrets.js';
import { type CarrierId, KEYED_VENDORS } from '../../providers/ids.js';

interface Shape {
  identifiers: readonly string[];
  secrets: readonly string[];
  /**
   * The fields that say where the secrets are sent, when the credential has any: a masked secret is
   * kept only while they stay. Vendor keys are bound to their vendor by where they are stored
   * (`api_keys.<vendor>`), carrier secrets go to the carrier's one address (an operator setting);
   * a SIP password goes to the trunk's `sip_domain`, which is stored beside the credential.
   */
  boundTo?: readonly string[];
}

const VENDOR_KEY: Shape = { identifiers: [], secrets: ['api_key'] };

/** Each carrier's account fields (typed by the carrier list: a new carrier needs its shape here). */
const CARRIER_SHAPES: Record<CarrierId, Shape> = {
  carrier_a: { identifiers: ['account_sid'], secrets: ['auth_token'] },
  carrier_b: { identifiers: ['connection_id', 'public_key'], secrets: ['api_key'] },
  carrier_c: { identifiers: ['application_id'], secrets: ['private_key', 'signature_secret'] },
};

export const CREDENTIAL_SHAPES: Record<string, Shape> = {
  ...CARRIER_SHAPES,
  sip_trunk: { identifiers: ['username'], secrets: ['password'], boundTo: ['sip_domain'] },
  // The organization's cloud account, where function tools run: its secret goes only to the cloud.
  cloud_functions: { identifiers: ['access_key', 'region'], secrets: ['secret_key'] },
  ...Object.fromEntries(KEYED_VENDORS.map((vendor) => [vendor, VENDOR_KEY])),
};

export type Credential = Record<string, string>;

export function maskCredential(provider: string, credential: Credential): Credential {
  const shape = CREDENTIAL_SHAPES[provider];
  const view: Credential = {};
  for (const [field, value] of Object.entries(credential)) {
    view[field] = shape?.secrets.includes(field) ? (maskSecret(value) ?? '') : value;
  }
  return view;
}

/**
 * The credential to store: the incoming fields, where a masked secret keeps the stored value (through
 * `restoreMasked`, like every stored secret). `endpoint` holds the fields stored outside the
 * credential that its secrets are bound to (the trunk's `sip_domain`), before and after the change.
 * Returns, instead, why a masked secret cannot be kept: nothing stored, or its address changed.
 */
export function mergeCredential(
  provider: string,
  incoming: Credential,
  stored: Credential | undefined,
  endpoint: { next?: Record<string, unknown>; previous?: Record<string, unknown> } = {},
): { credential: Credential; refused?: MaskedRefusal } {
  const shape = CREDENTIAL_SHAPES[provider];
  const secrets = (shape?.secrets ?? []).map((path) => ({ path, boundTo: shape?.boundTo }));
  const { result, refused } = restoreMasked(incoming, stored, secrets, endpoint);
  return { credential: result as Credential, ...(refused ? { refused } : {}) };
}
