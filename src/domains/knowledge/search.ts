/**
 * What an assistant would retrieve for a question — the search route's service. It reads the
 * assistant (tenant-scoped: another organization's is not found), takes its rag_settings with the
 * request's overrides, resolves the embeddings choice as a live call would (runtime/
 * resolve-embeddings.ts), and asks the retriever.
 */

import type { ProviderUrls } from '../../config.js';
import type { Executor } from '../../db/client.js';
import type { SecretBox } from '../../lib/secrets.js';
import { findAssistant } from '../assistants/reads.js';
import { notFound } from '../errors.js';
import type { Principal } from '../identity/principal.js';
import { resolveEmbeddings } from '../runtime/resolve-embeddings.js';
import { type KnowledgeRetriever, retrievalOptions } from './retrieval.js';
import type { Retrieval } from './types.js';

export interface KnowledgeSearchDeps {
  db: Executor;
  secrets: SecretBox;
  urls: Pick<ProviderUrls, 'embeddings'>;
  retriever: KnowledgeRetriever;
}

export interface SearchQuery {
  query: string;
  limit?: number;
  similarityThreshold?: number;
}

export class KnowledgeSearch {
  constructor(private readonly deps: KnowledgeSearchDeps) {}

  async search(
    principal: Principal,
    assistantId: number,
    query: SearchQuery,
  ): Promise<Retrieval & { includeMetadata: boolean }> {
    const { tenant } = principal;
    const assistant = await findAssistant(this.deps.db, tenant, assistantId);
    if (!assistant) throw notFound('Assistant not found in your organization');
    const rag = (assistant.config as { rag_settings?: Record<string, unknown> }).rag_settings;
    const options = retrievalOptions(rag);
    if (query.limit !== undefined) options.searchLimit = query.limit;
    if (query.similarityThreshold !== undefined) options.similarityThreshold = query.similarityThreshold;
    const embeddings = await resolveEmbeddings(this.deps, tenant, assistantId);
    const retrieval = await this.deps.retriever.retrieve({
      tenant,
      assistantId,
      question: query.query,
      options,
      embeddings,
    });
    return { ...retrieval, includeMetadata: options.includeMetadata };
  }
}
