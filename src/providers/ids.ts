/**
 * The one place provider ids are named (decisions §6): which ids exist for each kind of outside
 * service. Everything that lists them derives from here — the TypeBox unions of the routes
 * (`literalUnion`), the database CHECK constraints (`db/schema/checks.ts`), `CarrierId` and its
 * guard, the credential shapes — so adding a vendor starts with one line in this file.
 */
export const LLM_PROVIDERS = ['llm_a', 'llm_b', 'llm_c', 'llm_d', 'llm_e'] as const;
export const STT_PROVIDERS = ['stt_a'] as const;
export const TTS_PROVIDERS = ['tts_a', 'tts_b', 'tts_c', 'tts_d'] as const;
export const CARRIERS = ['carrier_a', 'carrier_b', 'carrier_c'] as const;
/** What a phone number is reached through: a carrier's API, or the organization's own SIP trunk. */
export const TELEPHONY_PROVIDERS = [...CARRIERS, 'sip_trunk'] as const;

/** Vendors whose API key an organization may bring (`api_keys`, fallback keys). */
export const KEYED_VENDORS = [...LLM_PROVIDERS, ...STT_PROVIDERS, ...TTS_PROVIDERS] as const;

/**
 * What an assistant or an LLM preset may name as its language model: a vendor, or `custom` (an
 * OpenAI-compatible address the organization gives, with its own key).
 */
export const LLM_PROVIDER_IDS = [...LLM_PROVIDERS, 'custom'] as const;

export type LlmProvider = (typeof LLM_PROVIDERS)[number];
export type SttProvider = (typeof STT_PROVIDERS)[number];
export type TtsProvider = (typeof TTS_PROVIDERS)[number];
export type CarrierId = (typeof CARRIERS)[number];
export type TelephonyProvider = (typeof TELEPHONY_PROVIDERS)[number];
export type KeyedVendor = (typeof KEYED_VENDORS)[number];
export type ProviderKind = 'telephony' | 'llm' | 'stt' | 'tts';

/** Whether `value` is one of `ids` (and so, to the type checker, one of their literal types). */
export function isOneOf<const T extends readonly string[]>(ids: T, value: string): value is T[number] {
  return (ids as readonly string[]).includes(value);
}

export function isCarrierId(value: string): value is CarrierId {
  return isOneOf(CARRIERS, value);
}

/** Whether `value` places calls: a carrier, or `sip_trunk` (the SIP agent). */
export function isTelephonyProvider(value: string): value is TelephonyProvider {
  return isOneOf(TELEPHONY_PROVIDERS, value);
}

export function kindOfVendor(vendor: KeyedVendor): Exclude<ProviderKind, 'telephony'> {
  if (isOneOf(LLM_PROVIDERS, vendor)) return 'llm';
  if (isOneOf(STT_PROVIDERS, vendor)) return 'stt';
  return 'tts';
}
