/**
 * POST /api/v1/assistants/{assistant_id}/knowledge/search: what the assistant would retrieve for a
 * question in a live turn — the same retrieval, the same settings (overridable here), the same
 * embeddings key — for checking a knowledge base before a call. A read: any member, API keys with
 * the assistants area at read level. docs/knowledge.md ("Retrieval") explains the answer.
 */
import { Type } from 'typebox';
import { access } from '../../http/access.js';
import { principalOf } from '../../http/auth.js';
import { errors } from '../../http/responses.js';
import { Id, IdParam } from '../../http/schemas.js';
import type { App } from '../../http/types.js';
import { Nullable } from '../../lib/schema.js';
import type { KnowledgeSearch } from './search.js';

const Passage = Type.Object(
  {
    chunk_id: Type.Integer(),
    document_id: Id,
    document_name: Nullable(
      Type.String({ description: 'Null when the assistant’s include_metadata is off' }),
    ),
    category: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    content: Type.String(),
    page: Nullable(Type.Integer()),
    heading: Nullable(Type.String()),
    score: Type.Number({ description: 'Reciprocal rank fusion score the passages are ordered by' }),
    similarity: Nullable(Type.Number({ description: 'Cosine similarity; null when found by words alone' })),
    text_rank: Nullable(
      Type.Number({ description: 'Full-text rank (ts_rank_cd); null when no word matched' }),
    ),
  },
  { title: 'KnowledgePassage' },
);

const SearchOut = Type.Object(
  {
    mode: Type.Union([Type.Literal('hybrid'), Type.Literal('full_text')]),
    notice: Type.Optional(Type.String({ description: 'Why the search was by words alone, when it was' })),
    passages: Type.Array(Passage),
    timing: Type.Object({
      embedding_ms: Nullable(Type.Number()),
      search_ms: Type.Number(),
      total_ms: Type.Number(),
    }),
  },
  { title: 'KnowledgeSearchResult' },
);

export function knowledgeSearchRoutes(app: App, search: KnowledgeSearch): void {
  app.post(
    '/api/v1/assistants/:assistant_id/knowledge/search',
    {
      config: { access: access.area('assistants', 'read') },
      schema: {
        operationId: 'searchKnowledge',
        tags: ['assistants'],
        summary: 'The passages the assistant would retrieve for a question (hybrid or words-only search)',
        description:
          'Runs the retrieval a live turn runs, with the assistant’s rag_settings; `limit` and ' +
          '`similarity_threshold` override search_limit and similarity_threshold for this request.',
        params: IdParam('assistant_id'),
        body: Type.Object(
          {
            query: Type.String({ minLength: 1, maxLength: 2000 }),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 50 })),
            similarity_threshold: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: SearchOut, ...errors({ 404: 'Assistant not found in your organization' }) },
      },
    },
    async (request) => {
      const { query, limit, similarity_threshold } = request.body;
      const found = await search.search(principalOf(request), request.params.assistant_id, {
        query,
        limit,
        similarityThreshold: similarity_threshold,
      });
      return {
        mode: found.mode,
        ...(found.notice ? { notice: found.notice } : {}),
        passages: found.passages.map((p) => ({
          chunk_id: p.chunkId,
          document_id: p.documentId,
          document_name: found.includeMetadata ? p.documentName : null,
          category: p.category,
          tags: p.tags,
          content: p.content,
          page: p.page ?? null,
          heading: p.heading ?? null,
          score: p.score,
          similarity: p.similarity,
          text_rank: p.textRank,
        })),
        timing: {
          embedding_ms: found.timing.embeddingMs,
          search_ms: found.timing.searchMs,
          total_ms: found.timing.totalMs,
        },
      };
    },
  );
}
