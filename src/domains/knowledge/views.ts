/** The JSON of a knowledge-base document and of its processing status: TypeBox schemas and fillers. */
import { Type } from 'typebox';
import { DOCUMENT_FORMATS, DOCUMENT_STATUSES, RETRIEVAL_MODES } from '../../db/schema/knowledge.js';
import { iso, literalUnion, Nullable, NullableTimestamp, Timestamp } from '../../lib/schema.js';
import type { DocumentRow } from './document-store.js';

export const DocumentStatus = literalUnion(DOCUMENT_STATUSES);

const RetrievalMode = Nullable(
  Type.Union([literalUnion(RETRIEVAL_MODES)], {
    description:
      'How the processed document is found: `hybrid` (by meaning and by words), `full_text` (by words only: no embeddings key); null until processing completes',
  }),
);

const Progress = Type.Integer({
  minimum: 0,
  maximum: 100,
  description: 'processed_chunks of total_chunks, in percent (100 once completed)',
});
const Notice = Nullable(
  Type.String({
    description: 'Something to know about a processed document (why it is found by words only)',
  }),
);
const ErrorText = Nullable(Type.String({ description: 'Why processing failed, written for people' }));
const TotalChunks = Nullable(
  Type.Integer({ description: 'Passages the text was split into; null until split' }),
);

export const DocumentOut = Type.Object(
  {
    id: Type.Integer(),
    assistant_id: Type.Integer(),
    name: Type.String(),
    category: Nullable(Type.String()),
    tags: Type.Array(Type.String()),
    file_name: Type.String({ description: 'The uploaded file’s name, as sent' }),
    content_type: Type.String({ description: 'The uploaded file’s type, as sent' }),
    format: Type.Union([literalUnion(DOCUMENT_FORMATS)], { description: 'The format it was read as' }),
    size_bytes: Type.Integer(),
    status: DocumentStatus,
    generation: Type.Integer({ description: 'Bumped by every re-processing' }),
    processing_settings: Type.Object(
      {
        chunking_strategy: Type.String(),
        chunk_size: Type.Integer(),
        chunk_overlap: Type.Integer(),
        embedding_model: Type.String(),
      },
      { description: 'The rag_settings this generation is (or was) processed with' },
    ),
    total_chunks: TotalChunks,
    processed_chunks: Type.Integer(),
    progress: Progress,
    retrieval_mode: RetrievalMode,
    embedding_model: Nullable(Type.String({ description: 'The model the stored vectors came from' })),
    embedding_dimensions: Nullable(Type.Integer()),
    notice: Notice,
    error: ErrorText,
    created_at: Timestamp,
    updated_at: Timestamp,
    processed_at: NullableTimestamp,
  },
  { title: 'KnowledgeDocument' },
);

export const DocumentStatusOut = Type.Object(
  {
    document_id: Type.Integer(),
    status: DocumentStatus,
    processed_chunks: Type.Integer(),
    total_chunks: TotalChunks,
    progress: Progress,
    retrieval_mode: RetrievalMode,
    notice: Notice,
    error: ErrorText,
    updated_at: Timestamp,
  },
  { title: 'KnowledgeDocumentStatus' },
);

function progressOf(row: DocumentRow): number {
  if (row.status === 'completed') return 100;
  if (!row.totalChunks) return 0;
  return Math.min(100, Math.floor((row.processedChunks / row.totalChunks) * 100));
}

export function documentView(row: DocumentRow) {
  return {
    id: row.id,
    assistant_id: row.assistantId,
    name: row.name,
    category: row.category,
    tags: row.tags,
    file_name: row.fileName,
    content_type: row.contentType,
    format: row.format,
    size_bytes: row.bytes,
    status: row.status,
    generation: row.generation,
    processing_settings: row.settings,
    total_chunks: row.totalChunks,
    processed_chunks: row.processedChunks,
    progress: progressOf(row),
    retrieval_mode: row.retrievalMode,
    embedding_model: row.embeddingModel,
    embedding_dimensions: row.embeddingDimensions,
    notice: row.notice,
    error: row.error,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
    processed_at: iso(row.processedAt),
  };
}

export function documentStatusView(row: DocumentRow) {
  return {
    document_id: row.id,
    status: row.status,
    processed_chunks: row.processedChunks,
    total_chunks: row.totalChunks,
    progress: progressOf(row),
    retrieval_mode: row.retrievalMode,
    notice: row.notice,
    error: row.error,
    updated_at: iso(row.updatedAt),
  };
}
