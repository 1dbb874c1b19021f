/**
 * The URLs of an assistant that something fetches for the tenant — the webhook receivers, the custom
 * LLM endpoints (its own and its fallbacks'), the HTTP tools' URLs —, as the request gave them, for the outbound-target
 * policy (`lib/outbound-target.ts`). Only what the request writes is checked, so a stored URL never
 * blocks an unrelated change; stored ones are judged again when they are fetched.
 */
import type { TargetField } from '../../lib/outbound-target.js';
import { customToolUrls } from './custom-tools.js';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function targetFieldsOf(body: Json): TargetField[] {
  const fields: TargetField[] = [];
  const add = (loc: Array<string | number>, url: unknown) => {
    if (typeof url === 'string') fields.push({ loc: ['body', ...loc], url });
  };
  add(['webhook_url'], body.webhook_url);
  add(['sms_webhook_url'], body.sms_webhook_url);
  add(['custom_llm_url'], body.custom_llm_url);
  if (isObject(body.llm_provider_config))
    add(['llm_provider_config', 'base_url'], body.llm_provider_config.base_url);
  const fallbacks = isObject(body.llm_fallback_providers) ? body.llm_fallback_providers.fallbacks : undefined;
  if (Array.isArray(fallbacks)) {
    fallbacks.forEach((fallback, index) => {
      if (isObject(fallback))
        add(['llm_fallback_providers', 'fallbacks', index, 'base_url'], fallback.base_url);
    });
  }
  if (isObject(body.tools_settings)) fields.push(...customToolUrls(body.tools_settings.custom_tools));
  return fields;
}
