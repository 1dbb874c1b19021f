/**
 * The JSON of an organization (platform-api.md "Organization") with its stored credentials masked,
 * and of its concurrency limits: the TypeBox schemas and the functions that fill them.
 */
import { Type } from 'typebox';
import { iso, Nullable, OpenObject, Timestamp } from '../../lib/schema.js';
import { type CARRIERS, KEYED_VENDORS } from '../../providers/ids.js';
import { maskCredential } from './credentials.js';
import type { OrganizationDetails } from './service.js';
import type { OrganizationRow } from './store.js';

const MaskedCredential = Type.Object({}, { additionalProperties: Type.String() });

export const OrganizationOut = Type.Object(
  {
    id: Type.Integer(),
    name: Type.String(),
    slug: Type.String(),
    description: Nullable(Type.String()),
    domain: Nullable(Type.String()),
    settings: OpenObject,
    api_keys: Type.Object(
      {},
      { additionalProperties: Type.Object({ api_key: Type.String(), active: Type.Boolean() }) },
    ),
    carrier_a: Nullable(MaskedCredential),
    carrier_b: Nullable(MaskedCredential),
    carrier_c: Nullable(MaskedCredential),
    sip_trunk_config: Nullable(OpenObject),
    cloud_functions: Nullable(MaskedCredential),
    inactive_keys: Type.Array(Type.Object({ provider: Type.String(), reason: Type.String() })),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { title: 'Organization' },
);

function baseView(row: OrganizationRow) {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    description: row.description,
    domain: row.domain,
    settings: row.settings,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}

export function organizationView(details: OrganizationDetails) {
  const { row, credentials } = details;
  const apiKeys: Record<string, { api_key: string; active: boolean }> = {};
  const inactive: Array<{ provider: string; reason: string }> = [];
  for (const vendor of KEYED_VENDORS) {
    const credential = credentials.get(vendor);
    if (!credential) continue;
    apiKeys[vendor] = {
      api_key: maskCredential(vendor, credential).api_key ?? '',
      active: !details.byoInactiveReason,
    };
    if (details.byoInactiveReason) inactive.push({ provider: vendor, reason: details.byoInactiveReason });
  }
  const carrier = (id: (typeof CARRIERS)[number]) => {
    const credential = credentials.get(id);
    return credential ? maskCredential(id, credential) : null;
  };
  const sip = credentials.get('sip_trunk');
  return {
    ...baseView(row),
    api_keys: apiKeys,
    carrier_a: carrier('carrier_a'),
    carrier_b: carrier('carrier_b'),
    carrier_c: carrier('carrier_c'),
    sip_trunk_config:
      row.sipTrunkConfig || sip
        ? { ...(row.sipTrunkConfig ?? {}), ...(sip ? maskCredential('sip_trunk', sip) : {}) }
        : null,
    cloud_functions: credentials.has('cloud_functions')
      ? maskCredential('cloud_functions', credentials.get('cloud_functions')!)
      : null,
    inactive_keys: inactive,
  };
}

export const Limit = Type.Object(
  { enabled: Type.Boolean(), concurrent_limit: Type.Integer({ minimum: 1, maximum: 100_000 }) },
  { additionalProperties: false },
);

export const ConcurrencyOut = Type.Object({
  tts: Type.Object({}, { additionalProperties: Limit }),
  stt: Type.Object({}, { additionalProperties: Limit }),
});

export const concurrencyView = (row: OrganizationRow) => ({
  tts: row.concurrencySettings.tts ?? {},
  stt: row.concurrencySettings.stt ?? {},
});
