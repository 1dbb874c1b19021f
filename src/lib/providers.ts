/**
 * Provider ids (decisions §6), in one place: which ids exist for each kind of outside service.
 */
export const LLM_PROVIDERS = ['llm_a', 'llm_b', 'llm_c', 'llm_d', 'llm_e'] as const;
export const STT_PROVIDERS = ['stt_a'] as const;
export const TTS_PROVIDERS = ['tts_a', 'tts_b', 'tts_c', 'tts_d'] as const;
export const CARRIERS = ['carrier_a', 'carrier_b', 'carrier_c'] as const;
export const TELEPHONY_PROVIDERS = [...CARRIERS, 'sip_trunk'] as const;

/** Vendors whose API key an organization may bring (`api_keys`, fallback keys). */
export const KEYED_VENDORS = [...LLM_PROVIDERS, ...STT_PROVIDERS, ...TTS_PROVIDERS] as const;

export type LlmProvider = (typeof LLM_PROVIDERS)[number];
export type SttProvider = (typeof STT_PROVIDERS)[number];
export type TtsProvider = (typeof TTS_PROVIDERS)[number];
export type Carrier = (typeof CARRIERS)[number];
export type KeyedVendor = (typeof KEYED_VENDORS)[number];
export type ProviderKind = 'telephony' | 'llm' | 'stt' | 'tts';

export function kindOfVendor(vendor: KeyedVendor): Exclude<ProviderKind, 'telephony'> {
  if ((LLM_PROVIDERS as readonly string[]).includes(vendor)) return 'llm';
  if ((STT_PROVIDERS as readonly string[]).includes(vendor)) return 'stt';
  return 'tts';
}
