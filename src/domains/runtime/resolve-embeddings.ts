/**
 * Where an assistant's knowledge-base embeddings go, and with which key. The rule:
 * - the model is the assistant's `rag_settings.embedding_model` (default text-embedding-3-small);
 * - an assistant whose `llm_provider` is `custom`, with both `llm_provider_config.base_url` and
 *   `api_key`, embeds at that address with that key (an OpenAI-compatible server usually serves
 *   `/embeddings` beside `/chat/completions`);
 * - otherwise embeddings go to `EMBEDDINGS_BASE_URL` (`config.providers.embeddings`) with, in this
 *   order: the assistant's `llm_provider_config.api_key` when its `llm_provider` is `llm_a`, the
 *   organization's `api_keys.llm_a`, its first enabled `llm_a` fallback key;
 * - no key (or an organization under HIPAA without a business associate agreement, where no
 *   bring-your-own key is used, as in resolve-config.ts) → null: retrieval is by words alone.
 * It reads what resolve-config.ts reads (the assistant, the organization's credentials and fallback
 * keys), and opens only the one secret it hands back. Another organization's assistant → null.
 */
import type { ProviderUrls } from '../../config.js';
import type { Executor } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import { openPaths } from '../../lib/secret-paths.js';
import type { SecretBox } from '../../lib/secrets.js';
import { findAssistant } from '../assistants/reads.js';
import { type AssistantSettings, SECRET_PATHS } from '../assistants/schemas.js';
import { listFallbackKeys } from '../fallback-keys/reads.js';
import type { EmbeddingsChoice } from '../knowledge/types.js';
import type { Credential } from '../organizations/credentials.js';
import { findOwnOrganization, listCredentials } from '../organizations/reads.js';
import { byoInactiveReason } from '../organizations/service.js';

export const DEFAULT_EMBEDDING_MODEL = 'text-embedding-3-small';

/** The vendor whose keys embed at EMBEDDINGS_BASE_URL. */
const EMBEDDINGS_VENDOR = 'llm_a';

export interface EmbeddingsDeps {
  db: Executor;
  secrets: SecretBox;
  urls: Pick<ProviderUrls, 'embeddings'>;
}

const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

export async function resolveEmbeddings(
  deps: EmbeddingsDeps,
  tenant: Tenant,
  assistantId: number,
): Promise<EmbeddingsChoice | null> {
  const assistant = await findAssistant(deps.db, tenant, assistantId);
  if (!assistant) return null;
  const [organization, credentialRows, fallbackRows] = await Promise.all([
    findOwnOrganization(deps.db, tenant),
    listCredentials(deps.db, tenant),
    listFallbackKeys(deps.db, tenant),
  ]);
  if (byoInactiveReason(organization?.settings ?? {})) return null;
  const settings = openPaths(assistant.config, SECRET_PATHS, deps.secrets) as AssistantSettings;
  const model = text(settings.rag_settings?.embedding_model) ?? DEFAULT_EMBEDDING_MODEL;
  const providerConfig = settings.llm_provider_config ?? {};
  const ownKey = text(providerConfig.api_key);

  const ownUrl = text(providerConfig.base_url);
  if (assistant.llmProvider === 'custom' && ownUrl && ownKey) {
    return { baseUrl: ownUrl, apiKey: ownKey, model, source: 'assistant' };
  }
  const at = (apiKey: string, source: EmbeddingsChoice['source']): EmbeddingsChoice => ({
    baseUrl: deps.urls.embeddings,
    apiKey,
    model,
    source,
  });
  if (assistant.llmProvider === EMBEDDINGS_VENDOR && ownKey) return at(ownKey, 'assistant');
  const row = credentialRows.find((r) => r.provider === EMBEDDINGS_VENDOR);
  const organizationKey = row ? text(deps.secrets.openJson<Credential>(row.sealed).api_key) : null;
  if (organizationKey) return at(organizationKey, 'organization');
  const fallback = fallbackRows.find((r) => r.provider === EMBEDDINGS_VENDOR && r.enabled);
  return fallback ? at(deps.secrets.open(fallback.apiKeySealed), 'fallback') : null;
}
