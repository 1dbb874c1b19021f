/**
 * The write-only secrets among an assistant's settings, as the API treats them
 * (src/domains/assistants `SECRETS` and `restoreMasked`): the API answers each masked (`****9f2c`);
 * the masked value sent back keeps the stored secret only while the fields it is bound to (its
 * provider, its address) stay as they were. So the editor sends what was typed, else the mask while
 * it still stands for the stored key, else nothing — and says when a changed provider needs its key
 * typed again. Secrets inside JSON boxes (fallback keys, tool headers, provider_config) are shown
 * masked there and follow the same rule.
 */
import { valueAt, withValue } from './draft.js';

export interface SecretPath {
  path: string;
  /** Fields whose change makes the stored secret unusable (it would go somewhere else). */
  boundTo: string[];
}

export const SECRET_FIELDS: SecretPath[] = [
  { path: 'llm_provider_config.api_key', boundTo: ['llm_provider', 'llm_provider_config.base_url'] },
  { path: 'stt_settings.api_key', boundTo: [] },
  { path: 'tts_settings.api_key', boundTo: ['tts_settings.provider'] },
  { path: 'carrier_a_config.auth_token', boundTo: [] },
  { path: 'carrier_b_config.api_key', boundTo: [] },
];

export const isSecret = (path: string) => SECRET_FIELDS.some((secret) => secret.path === path);

/** The masked value the API showed, while it can still stand for the stored secret. */
export function usableMask(saved: unknown, draft: unknown, path: string): string | undefined {
  const secret = SECRET_FIELDS.find((s) => s.path === path);
  const mask = valueAt(saved, path);
  if (!secret || typeof mask !== 'string') return undefined;
  const moved = secret.boundTo.some(
    (bound) => JSON.stringify(valueAt(saved, bound)) !== JSON.stringify(valueAt(draft, bound)),
  );
  return moved ? undefined : mask;
}

/**
 * The draft to send: each secret typed replaces the mask; one whose provider or address changed
 * (and none typed) is left out, so the API does not refuse the whole save for it.
 */
export function withSecrets<T>(saved: T, draft: T, typed: Record<string, string>): T {
  let result = draft;
  for (const { path } of SECRET_FIELDS) {
    const entered = typed[path]?.trim();
    const parent = path.split('.')[0]!;
    if (entered) result = withValue(result, path, entered);
    else if (valueAt(draft, path) !== undefined && !usableMask(saved, draft, path))
      result = withValue(result, path, undefined);
    else continue;
    // A parent left empty (no carrier account) stays null rather than becoming {}.
    const object = valueAt(result, parent) as Record<string, unknown> | null;
    if (object && Object.keys(object).length === 0) result = withValue(result, parent, null);
  }
  return result;
}
