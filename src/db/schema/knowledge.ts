/**
 * Knowledge bases (domains/knowledge): the documents an assistant answers from and the passages
 * (chunks) they were split into. A document's bytes live in the storage interface (`src/storage/`),
 * never in the database; its chunks carry their text, a full-text vector kept by PostgreSQL itself,
 * and — when an embeddings key exists — an embedding as `real[]`. That array is the portable truth:
 * where pgvector is installed (PGlite ships it) an HNSW index over `embedding::halfvec(n)` per
 * dimension `n` serves nearest-neighbour search (domains/knowledge/vector-index.ts); where it is not,
 * the same arrays are scanned exactly.
 *
 * Re-processing a document bumps its `generation` and deletes its chunks in one transaction; a
 * processing job names the generation it works for and writes nothing once that is stale.
 */
import { sql } from 'drizzle-orm';
import {
  bigint,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  real,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { assistants } from './assistants.js';
import { oneOf } from './checks.js';
import { tsvector } from './columns.js';
import { organizationColumn } from './identity.js';

/** What an upload may be: plain text, Markdown, HTML, PDF or DOCX (domains/knowledge/formats.ts). */
export const DOCUMENT_FORMATS = ['text', 'markdown', 'html', 'pdf', 'docx'] as const;
export type DocumentFormat = (typeof DOCUMENT_FORMATS)[number];

/** `pending` until a job picks it up (or forever with `auto_process` off), then `processing`, then an end. */
export const DOCUMENT_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const;
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number];

/** How a processed document can be found: by meaning and words, or — without an embeddings key — by words alone. */
export const RETRIEVAL_MODES = ['hybrid', 'full_text'] as const;
export type RetrievalMode = (typeof RETRIEVAL_MODES)[number];

/** The settings a document was (or is being) processed with: a change to any of them re-processes it. */
export interface ProcessingSettings {
  chunking_strategy: string;
  chunk_size: number;
  chunk_overlap: number;
  embedding_model: string;
}

export const knowledgeDocuments = pgTable(
  'knowledge_documents',
  {
    id: integer('id').primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    assistantId: integer('assistant_id')
      .notNull()
      .references(() => assistants.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    category: text('category'),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    /** The uploaded file's own name and type, as sent. */
    fileName: text('file_name').notNull(),
    contentType: text('content_type').notNull(),
    format: text('format').$type<DocumentFormat>().notNull(),
    bytes: bigint('bytes', { mode: 'number' }).notNull(),
    /** Where the storage keeps the bytes (a key, never a URL or a path). */
    storageKey: text('storage_key').notNull(),
    status: text('status').$type<DocumentStatus>().notNull().default('pending'),
    /** Bumped by every re-processing; chunks and jobs of an older generation are void. */
    generation: integer('generation').notNull().default(1),
    settings: jsonb('settings').$type<ProcessingSettings>().notNull(),
    /** Known once the text is split; null before. */
    totalChunks: integer('total_chunks'),
    processedChunks: integer('processed_chunks').notNull().default(0),
    /** Set when processing completes: `hybrid` with embeddings, `full_text` without. */
    retrievalMode: text('retrieval_mode').$type<RetrievalMode>(),
    /** The embedding model and dimension the chunks' vectors came from (null without embeddings). */
    embeddingModel: text('embedding_model'),
    embeddingDimensions: integer('embedding_dimensions'),
    /** Why processing failed, or why retrieval is by words alone; written for people to read. */
    error: text('error'),
    notice: text('notice'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    processedAt: timestamp('processed_at', { withTimezone: true }),
  },
  (t) => [
    index('knowledge_documents_assistant_idx').on(t.assistantId, t.id),
    check('knowledge_documents_format_check', oneOf(t.format, DOCUMENT_FORMATS)),
    check('knowledge_documents_status_check', oneOf(t.status, DOCUMENT_STATUSES)),
    check(
      'knowledge_documents_retrieval_mode_check',
      sql`${t.retrievalMode} is null or ${oneOf(t.retrievalMode, RETRIEVAL_MODES)}`,
    ),
    check('knowledge_documents_processed_check', sql`${t.processedChunks} >= 0`),
  ],
);

export const knowledgeChunks = pgTable(
  'knowledge_chunks',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    organizationId: organizationColumn(),
    /** The document's assistant, repeated so retrieval filters one table. */
    assistantId: integer('assistant_id')
      .notNull()
      .references(() => assistants.id, { onDelete: 'cascade' }),
    documentId: integer('document_id')
      .notNull()
      .references(() => knowledgeDocuments.id, { onDelete: 'cascade' }),
    generation: integer('generation').notNull(),
    /** 0, 1, 2… in reading order within the document. */
    position: integer('position').notNull(),
    content: text('content').notNull(),
    /** Estimated tokens of `content` (what the context window budget counts). */
    tokens: integer('tokens').notNull(),
    /** Where in the document the passage stands: `page` (PDF), `heading` (Markdown, HTML, DOCX). */
    location: jsonb('location').$type<{ page?: number; heading?: string }>().notNull().default({}),
    embedding: real('embedding').array(),
    /** The embedding's length, so the per-dimension HNSW index (a partial index) applies. */
    dimensions: integer('dimensions'),
    /** Kept by PostgreSQL from `content` (English stemming): the full-text half of retrieval. */
    searchVector: tsvector('search_vector')
      .notNull()
      .generatedAlwaysAs(sql`to_tsvector('english'::regconfig, content)`),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('knowledge_chunks_document_position_key').on(t.documentId, t.generation, t.position),
    index('knowledge_chunks_assistant_idx').on(t.assistantId),
    index('knowledge_chunks_search_idx').using('gin', t.searchVector),
    check('knowledge_chunks_dimensions_check', sql`${t.dimensions} is null or ${t.dimensions} > 0`),
  ],
);
