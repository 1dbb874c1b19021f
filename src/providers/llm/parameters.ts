/**
 * Which sampling parameters each language model vendor takes, in one table read by two sides: the
 * adapters (what a request may carry, so that no call fails on a parameter the vendor refuses) and
 * the assistants' and presets' validation (a setting a vendor cannot honour is refused when it is
 * saved, not discovered in a call). From the vendors' documentation:
 * - llm_a (OpenAI): all of them; temperature 0–2, up to 4 stop sequences.
 * - llm_b (messages API): temperature 0–1; no frequency or presence penalty (unknown fields are a
 *   400); newer models refuse `temperature` together with `top_p` ("cannot both be specified"), so
 *   one of the two is sent: `top_p` when it narrows anything (< 1), else `temperature`.
 * - llm_c (Gemini's OpenAI endpoint): no penalties — Gemini 2.5 and newer answer 400 "Penalty is not
 *   enabled for models/…"; up to 5 stop sequences.
 * - llm_d (Groq): all of them (logprobs, logit_bias and `n` > 1 are what it refuses; we send none);
 *   up to 4 stop sequences.
 * - llm_e (DeepSeek): all of them; up to 16 stop sequences; `deepseek-chat` writes at most 8192
 *   tokens (a larger `max_tokens` is a 400).
 * - custom: whatever the endpoint takes is its owner's business: everything is sent.
 */
import type { LlmParameters } from './types.js';

/** The `llm_settings` fields that are sampling parameters. */
export type SettingName =
  | 'temperature'
  | 'max_tokens'
  | 'top_p'
  | 'frequency_penalty'
  | 'presence_penalty'
  | 'stop_sequences';

export interface VendorParameters {
  temperatureMax: number;
  frequencyPenalty: boolean;
  presencePenalty: boolean;
  /** The vendor takes `temperature` or `top_p`, not both. */
  temperatureOrTopP: boolean;
  stopMax: number;
  /** The most tokens the model writes, when the vendor documents a limit below ours. */
  maxTokensMax?: (model: string | undefined) => number | undefined;
}

/** The `llm_settings` defaults: a value equal to one of these is never refused. */
export const SETTING_DEFAULTS = {
  temperature: 0.7,
  max_tokens: 1000,
  top_p: 1,
  frequency_penalty: 0,
  presence_penalty: 0,
} as const;

const EVERYTHING: VendorParameters = {
  temperatureMax: 2,
  frequencyPenalty: true,
  presencePenalty: true,
  temperatureOrTopP: false,
  stopMax: Number.POSITIVE_INFINITY,
};

export const LLM_PARAMETERS: Record<string, VendorParameters> = {
  llm_a: { ...EVERYTHING, stopMax: 4 },
  llm_b: {
    temperatureMax: 1,
    frequencyPenalty: false,
    presencePenalty: false,
    temperatureOrTopP: true,
    stopMax: Number.POSITIVE_INFINITY,
  },
  llm_c: { ...EVERYTHING, frequencyPenalty: false, presencePenalty: false, stopMax: 5 },
  llm_d: { ...EVERYTHING, stopMax: 4 },
  llm_e: {
    ...EVERYTHING,
    stopMax: 16,
    maxTokensMax: (model) => (model === undefined || model === 'deepseek-chat' ? 8192 : undefined),
  },
  custom: EVERYTHING,
};

function parametersOf(provider: string): VendorParameters {
  return LLM_PARAMETERS[provider] ?? EVERYTHING;
}

/**
 * The settings `provider` cannot honour, each with why. Only values that differ from the defaults
 * count: a default is what every call sends anyway, and the adapter leaves out what the vendor
 * does not take. `model` is the assistant's model (undefined: the vendor's default one).
 */
export function refusedSettings(
  provider: string,
  model: string | undefined,
  settings: Partial<Record<SettingName, unknown>>,
): Array<{ field: SettingName; msg: string }> {
  const vendor = parametersOf(provider);
  const refused: Array<{ field: SettingName; msg: string }> = [];
  const set = (field: keyof typeof SETTING_DEFAULTS): number | undefined => {
    const value = settings[field];
    return typeof value === 'number' && value !== SETTING_DEFAULTS[field] ? value : undefined;
  };
  const temperature = set('temperature');
  if (temperature !== undefined && temperature > vendor.temperatureMax) {
    refused.push({
      field: 'temperature',
      msg: `${provider} takes a temperature from 0 to ${vendor.temperatureMax}`,
    });
  }
  if (vendor.temperatureOrTopP && temperature !== undefined && set('top_p') !== undefined) {
    refused.push({
      field: 'top_p',
      msg: `${provider} takes temperature or top_p, not both: leave one of them at its default`,
    });
  }
  for (const [field, taken] of [
    ['frequency_penalty', vendor.frequencyPenalty],
    ['presence_penalty', vendor.presencePenalty],
  ] as const) {
    if (!taken && set(field) !== undefined) refused.push({ field, msg: `${provider} has no ${field}` });
  }
  const stops = settings.stop_sequences;
  if (Array.isArray(stops) && stops.length > vendor.stopMax) {
    refused.push({
      field: 'stop_sequences',
      msg: `${provider} takes at most ${vendor.stopMax} stop sequences`,
    });
  }
  const maxTokens = set('max_tokens');
  const limit = vendor.maxTokensMax?.(model);
  if (maxTokens !== undefined && limit !== undefined && maxTokens > limit) {
    refused.push({
      field: 'max_tokens',
      msg: `${provider} writes at most ${limit} tokens with ${model ?? 'its default model'}`,
    });
  }
  return refused;
}

/**
 * The parameters a request to `provider` carries: those it does not take left out, a temperature
 * above its range brought into it (settings saved before the range was checked), and for a vendor
 * that takes temperature or top_p, the one that matters.
 */
export function wireParameters(provider: string, params: LlmParameters): LlmParameters {
  const vendor = parametersOf(provider);
  const wire: LlmParameters = { ...params };
  if (!vendor.frequencyPenalty) delete wire.frequencyPenalty;
  if (!vendor.presencePenalty) delete wire.presencePenalty;
  if (wire.temperature !== undefined) wire.temperature = Math.min(wire.temperature, vendor.temperatureMax);
  if (vendor.temperatureOrTopP) {
    // top_p 1 keeps every token: the same as not sending it.
    if (wire.topP !== undefined && wire.topP < 1) delete wire.temperature;
    else delete wire.topP;
  }
  if (wire.stop && wire.stop.length > vendor.stopMax) wire.stop = wire.stop.slice(0, vendor.stopMax);
  return wire;
}
