/**
 * Whether the database can search embeddings by index, and the indexes it searches them with.
 *
 * Chunks keep their embedding as `real[]` with its length in `dimensions` (db/schema/knowledge.ts):
 * that column works on every PostgreSQL. Where pgvector is installed (PGlite ships 0.8.x; a server
 * when the package is there and migration 0016 could create it), each embedding length `n` in use
 * gets one partial HNSW index:
 *
 *   create index knowledge_chunks_embedding_<n>_idx on knowledge_chunks
 *     using hnsw ((embedding::vector(n)) vector_cosine_ops) where dimensions = n      -- n ≤ 2000
 *     using hnsw ((embedding::halfvec(n)) halfvec_cosine_ops) where dimensions = n    -- 2000 < n ≤ 4000
 *
 * Why this shape: one table serves every assistant's model, and models differ in length (1536,
 * 3072, 768…), while a vector index needs one fixed length. A partial index per length gives each
 * its own graph without a column per model; a query orders by the same cast `<=> $q` with
 * `dimensions = n` so the planner picks it (`indexedType` is the one place the cast is chosen).
 * `vector` (32-bit floats) up to HNSW's 2,000 dimensions: on PGlite (WebAssembly, no F16C) every
 * halfvec distance converts each element in software, and one insert into a 1536-dimension HNSW
 * graph measured ~350 ms with halfvec against ~55 ms with vector. Beyond 2,000 (text-embedding-3-large's
 * 3,072) `halfvec`, whose HNSW takes up to 4,000 at half the memory; longer embeddings are searched
 * exactly (vector-search.ts).
 *
 * Indexes are created on first use of a length (chunk-store.ts, when chunks of a new length are
 * inserted), not in a migration, since the lengths are the tenants' choice. Creation is safe when two
 * processes race: one DO statement takes a transaction-scoped advisory lock, looks the index up and
 * creates it only when it is missing, so the loser finds it made. It runs in the caller's transaction:
 * a plain CREATE INDEX takes a SHARE lock on knowledge_chunks until that commits, which happens once
 * per length per database, while the table holds no rows of that length (so the build is instant).
 */
import { sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';

/** HNSW over halfvec takes at most this many dimensions; longer embeddings are searched exactly. */
export const MAX_INDEXED_DIMENSIONS = 4000;
/** HNSW over vector takes at most this many. */
const MAX_VECTOR_DIMENSIONS = 2000;

/** The pgvector type embeddings of this length are indexed (and so searched) as: `vector(n)` or `halfvec(n)`. */
export function indexedType(dimensions: number): { type: string; ops: string } {
  return dimensions <= MAX_VECTOR_DIMENSIONS
    ? { type: `vector(${dimensions})`, ops: 'vector_cosine_ops' }
    : { type: `halfvec(${dimensions})`, ops: 'halfvec_cosine_ops' };
}

/** Advisory lock class of index creation (any fixed number no other module uses for advisory locks). */
const INDEX_LOCK_CLASS = 20_016;

export function vectorIndexName(dimensions: number): string {
  return `knowledge_chunks_embedding_${dimensions}_idx`;
}

// Cached per executor object: the platform passes its one database handle, so that is once per
// database; a transaction handle asks again (one catalog lookup).
const installed = new WeakMap<object, Promise<boolean>>();

/** Whether pgvector is installed in this database (migration 0016 creates it where it can). */
export function vectorInstalled(db: Executor): Promise<boolean> {
  let known = installed.get(db);
  if (!known) {
    known = db
      .execute(sql`select exists (select 1 from pg_extension where extname = 'vector') as "installed"`)
      .then((result) => Boolean(rowsOf(result)[0]?.installed));
    // A failed lookup is not remembered: the next call asks again.
    known.catch(() => installed.delete(db));
    installed.set(db, known);
  }
  return known;
}

/** Whether embeddings of this length can have an HNSW index. */
export function indexable(dimensions: number): boolean {
  return Number.isInteger(dimensions) && dimensions > 0 && dimensions <= MAX_INDEXED_DIMENSIONS;
}

/**
 * Creates the partial HNSW index for embeddings of `dimensions` unless it exists. Returns false
 * (and does nothing) when pgvector is not installed or the length cannot be indexed.
 */
export async function ensureVectorIndex(db: Executor, dimensions: number): Promise<boolean> {
  if (!indexable(dimensions) || !(await vectorInstalled(db))) return false;
  const name = vectorIndexName(dimensions);
  const { type, ops } = indexedType(dimensions);
  // `dimensions` is a checked integer, so formatting it into the statement is safe; a DO block
  // cannot take parameters. The advisory lock makes the look-up and the creation one step across
  // processes (CREATE INDEX IF NOT EXISTS alone still fails the second of two racing creators).
  await db.execute(
    sql.raw(`do $$
begin
  perform pg_advisory_xact_lock(${INDEX_LOCK_CLASS}, ${dimensions});
  if to_regclass('${name}') is null then
    execute 'create index ${name} on knowledge_chunks using hnsw ((embedding::${type}) ${ops}) where dimensions = ${dimensions}';
  end if;
end $$`),
  );
  return true;
}

/** Whether the index for this length exists (the retriever uses the index path only then). */
export async function vectorIndexExists(db: Executor, dimensions: number): Promise<boolean> {
  if (!indexable(dimensions)) return false;
  const result = await db.execute(
    sql`select to_regclass(${vectorIndexName(dimensions)}) is not null as "exists"`,
  );
  return Boolean(rowsOf(result)[0]?.exists);
}

/** The rows of `execute`'s result, whichever driver ran it (both hand back `{ rows }`). */
export function rowsOf(result: unknown): Record<string, unknown>[] {
  return (result as { rows: Record<string, unknown>[] }).rows;
}
