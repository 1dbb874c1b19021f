/**
 * How the call runtime gives an assistant its knowledge in a call (`VoiceRuntimeDeps.knowledge`):
 * once per assistant per call — for the call's first assistant and for each one a graph hands over
 * to — it checks `rag_settings.enabled`, whether the assistant has passages at all (one indexed
 * look-up: an assistant without documents pays nothing per turn), and resolves the embeddings key and
 * address (resolve-embeddings.ts) and the retrieval options, so a turn only embeds and searches.
 * Never rejects: a failure here leaves the call without knowledge, logged, rather than without a voice.
 */
import type { ProviderUrls } from '../config.js';
import type { Executor } from '../db/client.js';
import type { Tenant } from '../db/tenant.js';
import { hasKnowledge } from '../domains/knowledge/has-knowledge.js';
import { retrievalOptions } from '../domains/knowledge/retrieval.js';
import type { ResolvedConfig } from '../domains/runtime/resolve-config.js';
import { resolveEmbeddings } from '../domains/runtime/resolve-embeddings.js';
import type { SecretBox } from '../lib/secrets.js';
import { type KnowledgeSource, knowledgeSource, type Retriever } from './knowledge.js';

export interface KnowledgeSetupDeps {
  db: Executor;
  secrets: SecretBox;
  urls: ProviderUrls;
  retriever: Retriever;
  log: { warn(data: object, message: string): void };
  /** The retrieval time budget of each turn (default knowledge.ts's). */
  budgetMs?: number;
}

export function callKnowledge(
  deps: KnowledgeSetupDeps,
): (tenant: Tenant, resolved: ResolvedConfig) => Promise<KnowledgeSource | undefined> {
  return async (tenant, resolved) => {
    const rag = resolved.settings.rag_settings;
    if (!rag?.enabled) return undefined;
    const assistantId = resolved.assistant.id;
    try {
      if (!(await hasKnowledge(deps.db, tenant, assistantId))) return undefined;
      const embeddings = await resolveEmbeddings(deps, tenant, assistantId);
      return knowledgeSource({
        retriever: deps.retriever,
        tenant,
        assistantId,
        options: retrievalOptions(rag),
        embeddings,
        ...(deps.budgetMs ? { budgetMs: deps.budgetMs } : {}),
      });
    } catch (error) {
      deps.log.warn({ err: error, assistantId }, 'setting up the assistant’s knowledge failed: none used');
      return undefined;
    }
  };
}
