/**
 * The shapes the knowledge-base modules pass between them: a parsed document (text in reading order,
 * with where each part stands), the chunks it is split into, and what retrieval returns. Parsing and
 * splitting are pure (formats.ts, parse/*, chunking.ts); processing stores chunks (processing.ts);
 * retrieval reads them (retrieval.ts) for the search route and for live calls (voice/knowledge.ts).
 */
import type { DocumentFormat, RetrievalMode } from '../../db/schema/knowledge.js';

export type { DocumentFormat, RetrievalMode };

/** A stretch of a document's text, with where it stands: a PDF's page, the heading it falls under. */
export interface ParsedSection {
  text: string;
  page?: number;
  heading?: string;
}

/** A document as text in reading order. Paragraphs inside a section are separated by blank lines. */
export interface ParsedDocument {
  sections: ParsedSection[];
}

export type ChunkingStrategy = 'recursive' | 'fixed' | 'sentence' | 'semantic';

export interface ChunkingOptions {
  strategy: ChunkingStrategy;
  /** Characters per chunk at most (rag_settings.chunk_size). */
  chunkSize: number;
  /** Characters a chunk repeats from the end of the one before (rag_settings.chunk_overlap), < chunkSize. */
  chunkOverlap: number;
  /**
   * `semantic` only: embeds sentences so the split can fall where the meaning shifts. Absent (no
   * embeddings key), `semantic` splits like `sentence`.
   */
  embed?: (texts: string[]) => Promise<Float32Array[]>;
}

export interface TextChunk {
  /** 0, 1, 2… in reading order. */
  position: number;
  content: string;
  /** Estimated tokens (estimateTokens). */
  tokens: number;
  page?: number;
  heading?: string;
}

/** How retrieval is asked: the assistant's rag_settings, as numbers. */
export interface RetrievalOptions {
  searchLimit: number;
  /** Cosine similarity a passage needs to count as a match by meaning (0..1). */
  similarityThreshold: number;
  includeMetadata: boolean;
  /** Tokens all passages together may take in the prompt. */
  contextWindowTokens: number;
}

export interface Passage {
  chunkId: number;
  documentId: number;
  documentName: string;
  category: string | null;
  tags: string[];
  position: number;
  content: string;
  tokens: number;
  page?: number;
  heading?: string;
  /** The fused score it was ranked by (reciprocal rank fusion of the two lists). */
  score: number;
  /** Cosine similarity to the question; null when it was found by words alone. */
  similarity: number | null;
  /** Full-text rank (ts_rank_cd); null when the words did not match. */
  textRank: number | null;
}

export interface Retrieval {
  /** `hybrid` when the question was embedded and vectors searched; `full_text` otherwise. */
  mode: RetrievalMode;
  /** Best first, within search_limit and the token budget. */
  passages: Passage[];
  /** Why the search fell back to words alone, when it did (no key, the vendor failed, no vectors). */
  notice?: string;
  timing: { embeddingMs: number | null; searchMs: number; totalMs: number };
}

/** Estimated tokens of a text: one per four characters, rounded up (the budget unit everywhere here). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * Where an assistant's embeddings come from (domains/runtime/resolve-embeddings.ts): the
 * OpenAI-compatible API at `baseUrl` with `apiKey`, model `rag_settings.embedding_model`. Null where
 * it is used means there is no key: retrieval is by words alone.
 */
export interface EmbeddingsChoice {
  baseUrl: string;
  apiKey: string | null;
  model: string;
  /** Where the key came from (never the key itself), for notices and records. */
  source: 'assistant' | 'organization' | 'fallback';
}
