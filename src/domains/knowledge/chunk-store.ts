/**
 * All SQL that writes or counts `knowledge_chunks` (db/schema/knowledge.ts): processing stores a
 * document's chunks through `insertChunks`, re-processing and deletion clear them, the status route
 * counts them. Retrieval's reads are in vector-search.ts and text-search.ts. Every statement is
 * scoped to the tenant.
 *
 * Inserts are built for big batches (a benchmark stores 100,000 chunks through them): multi-row
 * INSERTs of `INSERT_BATCH` rows, each embedding sent as one parameter in PostgreSQL's *binary*
 * `real[]` format (both drivers send a Buffer as a binary parameter, and the server's array_recv
 * reads it). Text would cost a float-to-decimal conversion per element in Node and a parse per
 * element in the server; binary is a copy.
 *
 * A chunk is only stored for a document of the tenant whose `generation` is the one it names (the
 * INSERT joins the document and locks it FOR SHARE): a job working for a generation re-processing
 * has since replaced writes nothing, and re-processing (which updates the document row) waits for an
 * insert in flight, then deletes what it stored. Rows already stored (same document, generation and
 * position: a job resumed after a crash) are skipped, so `insertChunks` reports what it added.
 */
import { and, count, eq, type SQL, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import { knowledgeChunks } from '../../db/schema/index.js';
import type { Tenant } from '../../db/tenant.js';
import { forgetLexemeFrequencies } from './lexeme-frequency.js';
import { ensureVectorIndex, indexable, rowsOf } from './vector-index.js';

export interface NewChunk {
  assistantId: number;
  documentId: number;
  generation: number;
  /** 0, 1, 2… in reading order within the document. */
  position: number;
  content: string;
  /** Estimated tokens of `content` (types.ts estimateTokens). */
  tokens: number;
  location: { page?: number; heading?: string };
  /** Null when the assistant has no embeddings (full-text retrieval only). */
  embedding: Float32Array | null;
}

/** Rows per INSERT: 9 parameters a row stays far below PostgreSQL's 65,535, and a 1536-dimension batch is ~6 MB. */
export const INSERT_BATCH = 500;

/** halfvec's largest finite value: an indexed embedding must fit (an index may cast every row to it). */
const HALF_MAX = 65504;

/**
 * Stores chunks; returns how many rows were added (rows already stored, or of a stale generation or
 * another organization's document, are not). The first embedding of a new length creates its index;
 * `ensured` holds the lengths whose index the caller has already seen to, for the one database it
 * writes to (the document processor keeps one set, so it asks once per length).
 */
export async function insertChunks(
  tx: Executor,
  tenant: Tenant,
  rows: NewChunk[],
  ensured: Set<number>,
): Promise<number> {
  for (const dimensions of new Set(rows.map((row) => row.embedding?.length ?? 0))) {
    if (dimensions === 0 || ensured.has(dimensions)) continue;
    await ensureVectorIndex(tx, dimensions);
    ensured.add(dimensions);
  }
  let inserted = 0;
  for (let start = 0; start < rows.length; start += INSERT_BATCH) {
    inserted += await insertBatch(tx, tenant, rows.slice(start, start + INSERT_BATCH));
  }
  return inserted;
}

async function insertBatch(tx: Executor, tenant: Tenant, rows: NewChunk[]): Promise<number> {
  const values = rows.map((row) => {
    const embedding = row.embedding ? realArrayParameter(row.embedding) : null;
    return sql`(${row.assistantId}::int, ${row.documentId}::int, ${row.generation}::int, ${row.position}::int,
      ${row.content}::text, ${row.tokens}::int, ${JSON.stringify(locationOf(row))}::jsonb,
      ${embedding}::real[], ${row.embedding?.length ?? null}::int)`;
  });
  const result = await tx.execute(sql`
    with added as (
      insert into knowledge_chunks (organization_id, assistant_id, document_id, generation, position,
        content, tokens, location, embedding, dimensions)
      select d.organization_id, v.assistant_id, v.document_id, v.generation, v.position,
        v.content, v.tokens, v.location, v.embedding, v.dimensions
      from (values ${sql.join(values, sql`, `)})
        as v(assistant_id, document_id, generation, position, content, tokens, location, embedding, dimensions)
      join knowledge_documents d
        on d.id = v.document_id and d.assistant_id = v.assistant_id and d.generation = v.generation
          and d.organization_id = ${tenant.organizationId}
      for share of d
      on conflict (document_id, generation, position) do nothing
      returning 1
    )
    select count(*)::int as "added" from added`);
  return Number(rowsOf(result)[0]?.added ?? 0);
}

/** Only the keys a location has (no `undefined`s written as JSON nulls). */
function locationOf(row: NewChunk): { page?: number; heading?: string } {
  const location: { page?: number; heading?: string } = {};
  if (row.location.page !== undefined) location.page = row.location.page;
  if (row.location.heading !== undefined) location.heading = row.location.heading;
  return location;
}

/**
 * An embedding in PostgreSQL's binary array format (array_recv): dimensions 1, no nulls, element
 * type float4 (oid 700), the length, lower bound 1, then each element as its byte length (4) and its
 * big-endian IEEE bits. Throws on values an index could not take (not finite; beyond halfvec's range).
 */
export function realArrayParameter(vector: Float32Array): Buffer {
  const buffer = Buffer.allocUnsafe(20 + 8 * vector.length);
  buffer.writeInt32BE(1, 0);
  buffer.writeInt32BE(0, 4);
  buffer.writeInt32BE(700, 8);
  buffer.writeInt32BE(vector.length, 12);
  buffer.writeInt32BE(1, 16);
  const limit = indexable(vector.length) ? HALF_MAX : Number.MAX_VALUE;
  let offset = 20;
  for (let i = 0; i < vector.length; i++) {
    const value = vector[i] as number;
    if (!Number.isFinite(value) || Math.abs(value) > limit)
      throw new RangeError(
        `Embedding value ${i} is ${value}: embeddings must be finite and within ±${limit}`,
      );
    buffer.writeInt32BE(4, offset);
    buffer.writeFloatBE(value, offset + 4);
    offset += 8;
  }
  return buffer;
}

/** Deletes every chunk of the document (all generations); returns how many there were. */
export async function deleteDocumentChunks(
  tx: Executor,
  tenant: Tenant,
  documentId: number,
): Promise<number> {
  const result = await tx.execute(sql`
    with deleted as (
      delete from knowledge_chunks
      where ${tenant.where(knowledgeChunks, eq(knowledgeChunks.documentId, documentId))}
      returning 1
    )
    select count(*)::int as "deleted" from deleted`);
  return Number(rowsOf(result)[0]?.deleted ?? 0);
}

/** How many chunks of the document's `generation` are stored (processing's progress after a crash). */
export async function storedChunkCount(
  tx: Executor,
  tenant: Tenant,
  documentId: number,
  generation: number,
): Promise<number> {
  const condition: SQL = and(
    eq(knowledgeChunks.documentId, documentId),
    eq(knowledgeChunks.generation, generation),
  ) as SQL;
  const [row] = await tx
    .select({ stored: count() })
    .from(knowledgeChunks)
    .where(tenant.where(knowledgeChunks, condition));
  return Number(row?.stored ?? 0);
}

/**
 * Upkeep after a document's chunks are stored, which autovacuum does on a server and nothing does on
 * PGlite (it runs no autovacuum). Processing calls it when a document completes; it is table-wide, the
 * same whichever tenant triggers it.
 *
 * - The words index's pending list is merged (`gin_clean_pending_list`): GIN takes inserts into an
 *   unordered list that every search reads through in full until it is merged; after a bulk load it
 *   sat at its 4 MB limit and cost each full-text query ~450 page reads (measured at 100,000 chunks:
 *   an all-words query 4.6 ms before, 0.3 ms after).
 * - Statistics are gathered when the table was never analysed or grew by a tenth since: without
 *   them the planner guessed an assistant had 15 chunks and sorted them all by distance instead of
 *   walking the vector index (PGlite, 3,000 chunks: 100 ms against 1.3 ms). The words half reads
 *   its words' frequencies from the same statistics (lexeme-frequency.ts), read again from then on.
 */
export async function maintainChunkIndexes(db: Executor, added: number): Promise<void> {
  await db.execute(sql`select gin_clean_pending_list('knowledge_chunks_search_idx'::regclass)`);
  const result = await db.execute(
    sql`select reltuples::float8 as "estimate" from pg_class where oid = 'knowledge_chunks'::regclass`,
  );
  const estimate = Number(rowsOf(result)[0]?.estimate ?? -1);
  if (estimate < 0 || added >= estimate / 10) {
    await db.execute(sql`analyze knowledge_documents`);
    await db.execute(
      sql`analyze knowledge_chunks (organization_id, assistant_id, document_id, generation, dimensions, search_vector)`,
    );
    forgetLexemeFrequencies(db);
  }
}
