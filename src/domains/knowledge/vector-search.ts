/**
 * The meaning half of retrieval: an assistant's chunks nearest to the question's embedding, by cosine
 * similarity. Two paths give the same answers (test/knowledge-retrieval.test.ts checks):
 *
 * - **pgvector** (PGlite; a server with the extension): the per-length HNSW index of vector-index.ts,
 *   `ORDER BY embedding::vector(n) <=> $q LIMIT k` (halfvec above 2,000 dimensions), in a transaction that sets `hnsw.ef_search`
 *   (`efSearch`: `KNOWLEDGE_HNSW_EF_SEARCH`, 100 by default, and at least 2k) and `hnsw.iterative_scan =
 *   relaxed_order` (0.8): the index keeps walking until the assistant filter has let k rows through,
 *   instead of answering fewer when most neighbours belong to other assistants. Similarities are
 *   then computed exactly from the stored `real[]` in the same statement.
 * - **exact** (no pgvector, embeddings longer than 4,000, or forced): cosine over SQL arrays costs a
 *   row per element, far too slow, so the assistant's vectors live in this process as one
 *   Float32Array (unit-normalised, so a dot product is the cosine), loaded once through `array_send`
 *   (binary, 8 bytes an element) and scanned in a tight loop. The cache is keyed by a fingerprint of
 *   the assistant's *documents* (count, generations, processed counts, statuses, last update) —
 *   a handful of rows, so the check is cheap on every search — which every chunk write changes, since
 *   processing stores chunks with the document's progress in one transaction and re-processing or
 *   deletion changes the document row: other processes' writes invalidate it too. Memory is bounded
 *   (`maxCacheBytes`, least recently used assistants leave first); an assistant too big for the bound
 *   is loaded for each search and not kept (correct, slow: raise the bound or install pgvector).
 *
 * Only chunks of the assistant, of the tenant, and of documents `processing` or `completed` in their
 * current generation count (see text-search.ts for why).
 */
import { eq, gt, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { knowledgeChunks, knowledgeDocuments } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { realArrayParameter } from './chunk-store.js';
import { type CandidateRow, candidateColumns, readCandidate, visibleChunk } from './text-search.js';
import { indexable, indexedType, rowsOf, vectorIndexExists, vectorInstalled } from './vector-index.js';

export interface VectorCandidate extends CandidateRow {
  similarity: number;
}

export interface VectorSearchOptions {
  /** `exact` forces the in-process scan even where pgvector could serve (tests compare the two). */
  path: 'auto' | 'exact';
  /** Bytes all cached assistants' vectors may take together. */
  maxCacheBytes: number;
  /** The HNSW walk's candidate list (see `efSearch`). */
  efSearch: number;
}

interface CachedVectors {
  fingerprint: string;
  ids: Float64Array;
  /** `ids.length` rows of `dimensions` numbers, each row unit length. */
  matrix: Float32Array;
  bytes: number;
}

/** The HNSW walk's default candidate list: `KNOWLEDGE_HNSW_EF_SEARCH`. */
export const DEFAULT_EF_SEARCH = 100;

/**
 * How wide the HNSW walk keeps its candidate list for k results: the configured width, but never
 * under 2k (a list shorter than the results asked for cannot hold them) nor over pgvector's 1,000.
 * pgvector's default is 40; 100 costs about half of 200 (at 100,000 chunks of 1536 dimensions on the
 * server: the vector query alone p95 12 ms at 100, 19 ms at 200, 9 ms at 40). How many of the true
 * nearest it finds depends on the embeddings: real models' vectors cluster and HNSW finds most of
 * them at these widths, while the simulator's (hashes of words, near-orthogonal and near-tied) are
 * its worst case — the benchmark prints that recall, and `vectorPath: 'exact'` is always exact.
 */
export function efSearch(k: number, width: number = DEFAULT_EF_SEARCH): number {
  return Math.min(1000, Math.max(width, 2 * k));
}

/** Rows read per page when loading an assistant's vectors. */
const LOAD_PAGE = 2000;

export class VectorSearch {
  private readonly cache = new Map<string, CachedVectors>();
  private cachedBytes = 0;
  private readonly indexed = new Set<number>();

  constructor(
    private readonly db: Executor,
    private readonly options: VectorSearchOptions,
  ) {}

  /** Which path a search of this length takes. */
  async pathFor(dimensions: number): Promise<'pgvector' | 'exact'> {
    if (this.options.path === 'exact' || !indexable(dimensions)) return 'exact';
    if (this.indexed.has(dimensions)) return 'pgvector';
    if (!(await vectorInstalled(this.db)) || !(await vectorIndexExists(this.db, dimensions))) return 'exact';
    this.indexed.add(dimensions);
    return 'pgvector';
  }

  /** The `k` chunks nearest to `query`, best first, with their cosine similarity. */
  async search(
    tenant: Tenant,
    assistantId: number,
    query: Float32Array,
    k: number,
  ): Promise<VectorCandidate[]> {
    const path = await this.pathFor(query.length);
    return path === 'pgvector'
      ? this.indexSearch(tenant, assistantId, query, k)
      : this.exactSearch(tenant, assistantId, query, k);
  }

  /** Whether any chunk of the assistant has an embedding of this length (else: words only). */
  async hasVectors(tenant: Tenant, assistantId: number, dimensions: number): Promise<boolean> {
    const result = await this.db.execute(sql`
      select exists (select 1 from knowledge_chunks where ${tenant.where(
        knowledgeChunks,
        eq(knowledgeChunks.assistantId, assistantId),
        eq(knowledgeChunks.dimensions, dimensions),
      )}) as "found"`);
    return Boolean(rowsOf(result)[0]?.found);
  }

  private async indexSearch(
    tenant: Tenant,
    assistantId: number,
    query: Float32Array,
    k: number,
  ): Promise<VectorCandidate[]> {
    const n = query.length;
    const half = sql.raw(indexedType(n).type);
    const q = realArrayParameter(query);
    return this.db.transaction(async (tx) => {
      // Both settings for this transaction only (set_config's third argument), in one round trip.
      await tx.execute(sql`select set_config('hnsw.ef_search', ${String(efSearch(k, this.options.efSearch))}, true),
        set_config('hnsw.iterative_scan', 'relaxed_order', true)`);
      // The nearest rows by the index alone, in a subquery of one table: the same search joined with
      // the documents in one query measured twice a bare scan's time in the benchmark (as if every
      // row were cast and sorted), where EXPLAIN of the one-table form shows the index scan.
      // Visibility (visibleChunk) is checked on those k afterwards; it drops rows of failed
      // documents only, which are rare.
      const result = await tx.execute(sql`
        select ${candidateColumns},
          (1 - (knowledge_chunks.embedding::vector <=> ${q}::real[]::vector))::float8 as "similarity"
        from knowledge_chunks join knowledge_documents on knowledge_documents.id = knowledge_chunks.document_id
        where ${visibleChunk(tenant, assistantId)} and knowledge_chunks.id in (
          select id from knowledge_chunks
          where ${tenant.where(
            knowledgeChunks,
            eq(knowledgeChunks.assistantId, assistantId),
            eq(knowledgeChunks.dimensions, n),
          )}
          order by embedding::${half} <=> ${q}::real[]::${half}
          limit ${k})`);
      // relaxed_order may hand rows back slightly out of order: sort by the exact similarity.
      return rowsOf(result)
        .map((row) => ({ ...readCandidate(row), similarity: Number(row.similarity) }))
        .sort((a, b) => b.similarity - a.similarity);
    });
  }

  private async exactSearch(
    tenant: Tenant,
    assistantId: number,
    query: Float32Array,
    k: number,
  ): Promise<VectorCandidate[]> {
    const unit = normalised(query);
    const vectors = await this.vectorsOf(tenant, assistantId, unit.length);
    const best = topK(vectors.ids, vectors.matrix, unit, k);
    if (best.length === 0) return [];
    const similarity = new Map(best.map((hit) => [hit.id, hit.score]));
    const ids = `{${best.map((hit) => hit.id).join(',')}}`;
    // The rows themselves, still filtered: the cache may hold chunks of a document that failed since.
    const result = await this.db.execute(sql`
      select ${candidateColumns}
      from knowledge_chunks join knowledge_documents on knowledge_documents.id = knowledge_chunks.document_id
      where ${visibleChunk(tenant, assistantId)} and knowledge_chunks.id = any(${ids}::bigint[])`);
    return rowsOf(result)
      .map((row) => {
        const candidate = readCandidate(row);
        return { ...candidate, similarity: similarity.get(candidate.chunkId) ?? 0 };
      })
      .sort((a, b) => b.similarity - a.similarity);
  }

  /** The assistant's vectors of this length, from the cache when its documents have not changed. */
  private async vectorsOf(tenant: Tenant, assistantId: number, dimensions: number): Promise<CachedVectors> {
    const key = `${tenant.organizationId}:${assistantId}:${dimensions}`;
    const fingerprint = await this.fingerprint(tenant, assistantId);
    const cached = this.cache.get(key);
    if (cached && cached.fingerprint === fingerprint) {
      // Most recently used last: Map keeps insertion order, eviction takes the first.
      this.cache.delete(key);
      this.cache.set(key, cached);
      return cached;
    }
    if (cached) this.forget(key, cached);
    const loaded = await this.load(tenant, assistantId, dimensions, fingerprint);
    if (loaded.bytes <= this.options.maxCacheBytes) {
      while (this.cachedBytes + loaded.bytes > this.options.maxCacheBytes) {
        const [oldestKey, oldest] = this.cache.entries().next().value as [string, CachedVectors];
        this.forget(oldestKey, oldest);
      }
      this.cache.set(key, loaded);
      this.cachedBytes += loaded.bytes;
    }
    return loaded;
  }

  private forget(key: string, entry: CachedVectors): void {
    this.cache.delete(key);
    this.cachedBytes -= entry.bytes;
  }

  private async fingerprint(tenant: Tenant, assistantId: number): Promise<string> {
    const result = await this.db.execute(sql`
      select count(*)::int as "documents", coalesce(sum(generation), 0)::bigint::text as "generations",
        coalesce(sum(processed_chunks), 0)::bigint::text as "processed",
        coalesce(string_agg(id::text || status, ',' order by id), '') as "statuses",
        coalesce(max(updated_at)::text, '') as "updated"
      from knowledge_documents
      where ${tenant.where(knowledgeDocuments, eq(knowledgeDocuments.assistantId, assistantId))}`);
    const row = rowsOf(result)[0] ?? {};
    return [row.documents, row.generations, row.processed, row.statuses, row.updated].join('|');
  }

  /** Reads the assistant's vectors page by page (keyset on id), unit-normalising each. */
  private async load(
    tenant: Tenant,
    assistantId: number,
    dimensions: number,
    fingerprint: string,
  ): Promise<CachedVectors> {
    const ids: number[] = [];
    const parts: Float32Array[] = [];
    let after = 0;
    for (;;) {
      const result = await this.db.execute(sql`
        select id, array_send(embedding) as "vector"
        from knowledge_chunks
        where ${tenant.where(
          knowledgeChunks,
          eq(knowledgeChunks.assistantId, assistantId),
          eq(knowledgeChunks.dimensions, dimensions),
          gt(knowledgeChunks.id, after),
        )}
        order by id limit ${LOAD_PAGE}`);
      const rows = rowsOf(result);
      for (const row of rows) {
        ids.push(Number(row.id));
        parts.push(normalised(fromArraySend(row.vector as Uint8Array, dimensions)));
      }
      if (rows.length < LOAD_PAGE) break;
      after = ids[ids.length - 1] as number;
    }
    const matrix = new Float32Array(ids.length * dimensions);
    for (const [i, part] of parts.entries()) matrix.set(part, i * dimensions);
    return { fingerprint, ids: Float64Array.from(ids), matrix, bytes: matrix.byteLength + ids.length * 8 };
  }
}

/** A `real[]` from `array_send`: a 20-byte header, then per element its length (4) and big-endian bits. */
function fromArraySend(bytes: Uint8Array, dimensions: number): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const vector = new Float32Array(dimensions);
  for (let i = 0, offset = 24; i < dimensions; i++, offset += 8) vector[i] = view.getFloat32(offset);
  return vector;
}

function normalised(vector: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += (vector[i] as number) ** 2;
  const norm = Math.sqrt(sum);
  if (norm === 0) return vector;
  const unit = new Float32Array(vector.length);
  for (let i = 0; i < vector.length; i++) unit[i] = (vector[i] as number) / norm;
  return unit;
}

/** The `k` rows with the largest dot product with `query`, best first (a small sorted buffer). */
export function topK(
  ids: Float64Array,
  matrix: Float32Array,
  query: Float32Array,
  k: number,
): Array<{ id: number; score: number }> {
  const d = query.length;
  const best: Array<{ id: number; score: number }> = [];
  let floor = Number.NEGATIVE_INFINITY;
  for (let row = 0, base = 0; row < ids.length; row++, base += d) {
    let dot = 0;
    for (let i = 0; i < d; i++) dot += (matrix[base + i] as number) * (query[i] as number);
    if (best.length < k || dot > floor) {
      let at = best.length;
      while (at > 0 && (best[at - 1] as { score: number }).score < dot) at--;
      best.splice(at, 0, { id: ids[row] as number, score: dot });
      if (best.length > k) best.pop();
      floor = (best[best.length - 1] as { score: number }).score;
    }
  }
  return best;
}
