/**
 * Hybrid retrieval: the passages of an assistant's documents that answer a question, for the search
 * route and for every live turn (voice/knowledge.ts). Used on the call's path, so it is built for
 * latency: the question is embedded (with a time limit) while the full-text search already runs;
 * then the vector search; then the two lists are fused by reciprocal rank (fuse.ts), cut to
 * `search_limit` and fitted to `context_window_tokens`.
 *
 * Each list takes K = max(4 × limit, 20) candidates, so a chunk that only one list ranks well still
 * reaches the fusion, and the vector list keeps only chunks at or above `similarity_threshold`. When
 * there is no embeddings key, when embedding the question fails or runs out of time, or when no
 * passage has a vector of the question's length, retrieval is by words alone (`full_text`), and
 * `notice` says why in words for people. Scoping — the tenant, the assistant, visible documents — is
 * in text-search.ts (`visibleChunk`), the one place both lists share.
 */
import type { Executor } from '../../db/client.js';
import type { Tenant } from '../../db/tenant.js';
import type { EmbeddingsAdapter } from '../../providers/embeddings/types.js';
import { ProviderError } from '../../providers/errors.js';
import { fitBudget, fuse } from './fuse.js';
import { textSearch } from './text-search.js';
import type { EmbeddingsChoice, Passage, Retrieval, RetrievalOptions } from './types.js';
import { DEFAULT_EF_SEARCH, type VectorCandidate, VectorSearch } from './vector-search.js';

export interface RetrieveRequest {
  tenant: Tenant;
  assistantId: number;
  question: string;
  options: RetrievalOptions;
  /** Null: no embeddings key, words alone. */
  embeddings: EmbeddingsChoice | null;
  signal?: AbortSignal;
  /** How long embedding the question may take (default 2000 ms); then words alone. */
  embeddingTimeoutMs?: number;
}

export interface KnowledgeRetrieverDeps {
  db: Executor;
  adapter: EmbeddingsAdapter;
  /** `exact` forces the in-process vector scan where pgvector could serve (tests compare the paths). */
  vectorPath?: 'auto' | 'exact';
  /** Bytes the exact path's vector cache may hold (default 1 GiB; see vector-search.ts). */
  maxCacheBytes?: number;
  /** The HNSW walk's candidate list (`KNOWLEDGE_HNSW_EF_SEARCH`, default 100; see vector-search.ts). */
  efSearch?: number;
}

/** The rag_settings defaults of domains/assistants/schemas.ts (RagSettings). */
export const RETRIEVAL_DEFAULTS: RetrievalOptions = {
  searchLimit: 3,
  similarityThreshold: 0.7,
  includeMetadata: true,
  contextWindowTokens: 4000,
};

const DEFAULT_EMBEDDING_TIMEOUT_MS = 2000;

/** Retrieval options from an assistant's stored rag_settings (absent fields take the defaults). */
export function retrievalOptions(rag: Record<string, unknown> | null | undefined): RetrievalOptions {
  const number = (value: unknown, fallback: number) =>
    typeof value === 'number' && Number.isFinite(value) ? value : fallback;
  return {
    searchLimit: number(rag?.search_limit, RETRIEVAL_DEFAULTS.searchLimit),
    similarityThreshold: number(rag?.similarity_threshold, RETRIEVAL_DEFAULTS.similarityThreshold),
    includeMetadata:
      typeof rag?.include_metadata === 'boolean' ? rag.include_metadata : RETRIEVAL_DEFAULTS.includeMetadata,
    contextWindowTokens: number(rag?.context_window_tokens, RETRIEVAL_DEFAULTS.contextWindowTokens),
  };
}

/** Candidates each list takes for `limit` passages. */
export function candidateCount(limit: number): number {
  return Math.max(4 * limit, 20);
}

export class KnowledgeRetriever {
  private readonly vectors: VectorSearch;

  constructor(private readonly deps: KnowledgeRetrieverDeps) {
    this.vectors = new VectorSearch(deps.db, {
      path: deps.vectorPath ?? 'auto',
      maxCacheBytes: deps.maxCacheBytes ?? 1024 ** 3,
      efSearch: deps.efSearch ?? DEFAULT_EF_SEARCH,
    });
  }

  /** Which vector path a question embedded with this many dimensions takes (`pgvector` or `exact`). */
  vectorPath(dimensions: number): Promise<'pgvector' | 'exact'> {
    return this.vectors.pathFor(dimensions);
  }

  async retrieve(request: RetrieveRequest): Promise<Retrieval> {
    const started = performance.now();
    const { tenant, assistantId, question, options } = request;
    const k = candidateCount(options.searchLimit);
    const words = textSearch(this.deps.db, tenant, assistantId, question, k);
    // The text search's failure is the request's; do not leave it unobserved while embedding.
    words.catch(() => {});
    const embedded = await this.embedQuestion(request);

    let vectorList: VectorCandidate[] = [];
    let notice = embedded.notice;
    if (embedded.vector) {
      vectorList = await this.vectors.search(tenant, assistantId, embedded.vector, k);
      if (
        vectorList.length === 0 &&
        !(await this.vectors.hasVectors(tenant, assistantId, embedded.vector.length))
      )
        notice = 'No passage of this assistant has an embedding from this model yet: found by words only.';
    }
    const mode = embedded.vector && !notice ? 'hybrid' : 'full_text';
    const matches = vectorList.filter((candidate) => candidate.similarity >= options.similarityThreshold);
    const fused = fuse(matches, await words).slice(0, options.searchLimit);
    const passages = fitBudget(fused, options.contextWindowTokens).map((passage) =>
      options.includeMetadata ? passage : withoutMetadata(passage),
    );
    const totalMs = performance.now() - started;
    return {
      mode,
      passages,
      ...(notice ? { notice } : {}),
      timing: {
        embeddingMs: embedded.ms === null ? null : round(embedded.ms),
        searchMs: round(totalMs - (embedded.ms ?? 0)),
        totalMs: round(totalMs),
      },
    };
  }

  /** The question's vector, or why there is none. */
  private async embedQuestion(
    request: RetrieveRequest,
  ): Promise<{ vector: Float32Array | null; notice?: string; ms: number | null }> {
    const choice = request.embeddings;
    if (!choice)
      return { vector: null, ms: null, notice: 'No embeddings key for this assistant: found by words only.' };
    const started = performance.now();
    const timeoutMs = request.embeddingTimeoutMs ?? DEFAULT_EMBEDDING_TIMEOUT_MS;
    try {
      const result = await this.deps.adapter.embed({
        apiKey: choice.apiKey,
        baseUrl: choice.baseUrl,
        model: choice.model,
        inputs: [request.question.trim() || request.question],
        signal: request.signal,
        timeoutMs,
      });
      const vector = result.vectors[0];
      if (!vector || vector.length === 0) throw new Error('no vector in the answer');
      return { vector, ms: performance.now() - started };
    } catch (error) {
      request.signal?.throwIfAborted();
      return { vector: null, ms: performance.now() - started, notice: failureNotice(error, timeoutMs) };
    }
  }
}

function failureNotice(error: unknown, timeoutMs: number): string {
  if (error instanceof ProviderError) {
    const status = error.options.status;
    if (status !== undefined)
      return `The embeddings service refused the question (HTTP ${status}): found by words only.`;
    if (/time/i.test(error.message))
      return `The embeddings service did not answer within ${timeoutMs} ms: found by words only.`;
  }
  return 'The embeddings service could not be reached: found by words only.';
}

/** What a passage carries without include_metadata: ids and text, no document name, category, tags or place. */
function withoutMetadata(passage: Passage): Passage {
  const { page: _page, heading: _heading, ...rest } = passage;
  return { ...rest, documentName: '', category: null, tags: [] };
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
