/**
 * The vendors a call tries, in order, from what `runtime/resolve-config.ts` resolved: for each kind
 * the first key, then the provider's enabled fallback keys, and for the language model then the
 * assistant's `llm_fallback_providers`. Base URLs are the platform's configured vendor addresses,
 * except a language model's own `base_url` (checked against the outbound-target policy at call time,
 * as when it was saved: a name may resolve elsewhere by now).
 */
import type { ProviderUrls } from '../config.js';
import type { KeyLimit, ResolvedConfig, VendorChoice } from '../domains/runtime/resolve-config.js';
import type { OutboundTargets } from '../lib/outbound-target.js';
import type { ProviderError } from '../providers/errors.js';
import { isOneOf, LLM_PROVIDERS, TTS_PROVIDERS } from '../providers/ids.js';

/** The model a vendor is asked for when the assistant names none. */
export const DEFAULT_LLM_MODELS: Record<string, string> = {
  llm_a: 'gpt-4o-mini',
  llm_b: 'claude-3-5-haiku-latest',
  llm_c: 'gemini-2.0-flash',
  llm_d: 'llama-3.1-8b-instant',
  llm_e: 'deepseek-chat',
  custom: 'default',
};

export interface Candidate {
  provider: string;
  apiKey: string | null;
  baseUrl: string;
  /** Where the key came from, for the call's record (never the key itself). */
  label: string;
  /** The organization's limit on calls holding this key at once (leased: voice/call-leases.ts). */
  limit?: KeyLimit;
}

export interface LlmCandidate extends Candidate {
  model: string;
}

export interface VendorPlan {
  llm: LlmCandidate[];
  stt: Candidate[];
  tts: Candidate[];
  /** Why a candidate was left out (a refused address), for the call's record. */
  skipped: string[];
}

function keyed(choice: VendorChoice, baseUrl: string): Candidate[] {
  const keys = [...(choice.key ? [choice.key] : []), ...choice.backups];
  return keys.map((key) => ({
    provider: choice.provider,
    apiKey: key.apiKey,
    baseUrl,
    label: key.source === 'fallback' ? `fallback key ${key.name ?? ''}`.trim() : `${key.source} key`,
    ...(key.limit ? { limit: key.limit } : {}),
  }));
}

export async function planVendors(
  resolved: ResolvedConfig,
  urls: ProviderUrls,
  targets: OutboundTargets,
): Promise<VendorPlan> {
  const skipped: string[] = [];
  const ownAddress = async (url: string, what: string): Promise<boolean> => {
    const verdict = await targets.check(url);
    if (!verdict.ok) skipped.push(`${what}: ${verdict.reason}`);
    return verdict.ok;
  };
  const vendorUrl = (provider: string): string | undefined =>
    isOneOf(LLM_PROVIDERS, provider) ? urls.llm[provider] : undefined;

  const llm: LlmCandidate[] = [];
  const main = resolved.llm;
  const mainUrl = main.baseUrl ?? vendorUrl(main.provider);
  if (mainUrl && (main.baseUrl === null || (await ownAddress(main.baseUrl, 'llm base_url')))) {
    const model = main.model ?? DEFAULT_LLM_MODELS[main.provider] ?? 'default';
    if (main.key || main.provider === 'custom')
      for (const candidate of main.key
        ? keyed(main, mainUrl)
        : [{ provider: main.provider, apiKey: null, baseUrl: mainUrl, label: 'no key' }])
        llm.push({ ...candidate, model });
  }
  for (const [index, fallback] of resolved.llmFallbacks.entries()) {
    const url = fallback.baseUrl ?? vendorUrl(fallback.provider);
    if (!url) continue;
    if (
      fallback.baseUrl !== null &&
      !(await ownAddress(fallback.baseUrl, `llm fallback ${index + 1} base_url`))
    )
      continue;
    llm.push({
      provider: fallback.provider,
      apiKey: fallback.apiKey,
      baseUrl: url,
      model: fallback.model ?? DEFAULT_LLM_MODELS[fallback.provider] ?? 'default',
      label: `llm_fallback_providers[${index}]`,
    });
  }
  const ttsProvider = resolved.tts.provider;
  const ttsUrl = isOneOf(TTS_PROVIDERS, ttsProvider) ? urls.tts[ttsProvider] : undefined;
  return {
    llm,
    stt: keyed(resolved.stt, urls.stt),
    tts: ttsUrl ? keyed(resolved.tts, ttsUrl) : [],
    skipped,
  };
}

/** What a vendor switch records on the call: who failed and why, and who takes over — never a key. */
export function fallbackRecord(
  kind: 'llm' | 'stt' | 'tts',
  from: Candidate,
  error: ProviderError,
  next: Candidate | undefined,
): Record<string, unknown> {
  return {
    kind,
    provider: from.provider,
    key: from.label,
    error: error.message,
    status: error.status ?? null,
    next: next ? { provider: next.provider, key: next.label } : null,
  };
}
