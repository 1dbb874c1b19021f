/**
 * The chunk store (domains/knowledge/chunk-store.ts) on the file's database: binary embeddings stored
 * exactly, resumed inserts skipped, stale generations and other organizations' documents refused,
 * the per-length HNSW index created once (where pgvector is installed), deletion and counts.
 */
import { eq, sql } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { knowledgeChunks, knowledgeDocuments } from '../src/db/schema/index.js';
import { Tenant } from '../src/db/tenant.js';
import {
  deleteDocumentChunks,
  insertChunks,
  maintainChunkIndexes,
  type NewChunk,
  realArrayParameter,
  storedChunkCount,
} from '../src/domains/knowledge/chunk-store.js';
import { vectorIndexExists, vectorInstalled } from '../src/domains/knowledge/vector-index.js';
import { Factories, type TestUser } from './support/factories.js';
import { useTestPlatform } from './support/harness.js';

const t = useTestPlatform({}, { workers: false });
/** The vector index lengths this file's database has (insertChunks asks once per length). */
const indexed = new Set<number>();

async function documentOf(user: TestUser, assistantId: number, generation = 1): Promise<number> {
  const [row] = await t.database.db
    .insert(knowledgeDocuments)
    .values({
      organizationId: user.organizationId,
      assistantId,
      name: 'Handbook',
      fileName: 'handbook.txt',
      contentType: 'text/plain',
      format: 'text',
      bytes: 100,
      storageKey: `k-${Math.random()}`,
      generation,
      settings: {
        chunking_strategy: 'recursive',
        chunk_size: 1000,
        chunk_overlap: 200,
        embedding_model: 'x',
      },
    })
    .returning({ id: knowledgeDocuments.id });
  return row?.id as number;
}

function chunks(
  assistantId: number,
  documentId: number,
  count: number,
  dimensions: number | null,
): NewChunk[] {
  return Array.from({ length: count }, (_, position) => ({
    assistantId,
    documentId,
    generation: 1,
    position,
    content: `Passage number ${position} about returns and refunds.`,
    tokens: 12,
    location: position % 2 ? { page: position } : { heading: 'Returns' },
    embedding: dimensions
      ? Float32Array.from({ length: dimensions }, (_, i) => Math.sin(position + i) / 3)
      : null,
  }));
}

describe('chunk store', () => {
  let admin: TestUser;
  let tenant: Tenant;
  let assistantId: number;
  beforeAll(async () => {
    const factories = new Factories(t);
    admin = await factories.user();
    tenant = new Tenant(admin.organizationId);
    assistantId = await factories.assistant(admin, 'Store');
  });

  it('stores rows with their embeddings exactly, and skips rows already stored', async () => {
    const documentId = await documentOf(admin, assistantId);
    const rows = chunks(assistantId, documentId, 1203, 7);
    expect(await insertChunks(t.database.db, tenant, rows, indexed)).toBe(1203);
    expect(await insertChunks(t.database.db, tenant, rows.slice(1000), indexed)).toBe(0);
    expect(await storedChunkCount(t.database.db, tenant, documentId, 1)).toBe(1203);
    const [stored] = await t.database.db
      .select()
      .from(knowledgeChunks)
      .where(eq(knowledgeChunks.position, 5))
      .limit(1);
    expect(stored?.dimensions).toBe(7);
    // Read back as float4 text (shortest form) and made float32 again: the same bits.
    expect(Float32Array.from(stored?.embedding ?? [])).toEqual(rows[5]?.embedding);
    expect(stored?.location).toEqual({ page: 5 });
    expect(stored?.organizationId).toBe(admin.organizationId);
  });

  it('gathers the table’s statistics after a load, so the planner knows its size', async () => {
    const reltuples = async () => {
      const result = await t.database.db.execute(
        sql`select reltuples::float8 as "n" from pg_class where oid = 'knowledge_chunks'::regclass`,
      );
      return Number((result as unknown as { rows: Array<{ n: number }> }).rows[0]?.n);
    };
    const documentId = await documentOf(admin, assistantId);
    await insertChunks(t.database.db, tenant, chunks(assistantId, documentId, 400, 7), indexed);
    await maintainChunkIndexes(t.database.db, 400);
    const counted = await reltuples();
    expect(counted).toBeGreaterThanOrEqual(400);
    // A load of under a tenth of the table leaves the statistics as they were.
    const small = await documentOf(admin, assistantId);
    await insertChunks(t.database.db, tenant, chunks(assistantId, small, 3, 7), indexed);
    await maintainChunkIndexes(t.database.db, 3);
    expect(await reltuples()).toBe(counted);
  });

  it('stores chunks without embeddings (full-text only)', async () => {
    const documentId = await documentOf(admin, assistantId);
    expect(await insertChunks(t.database.db, tenant, chunks(assistantId, documentId, 3, null), indexed)).toBe(
      3,
    );
    const [stored] = await t.database.db
      .select({ embedding: knowledgeChunks.embedding, dimensions: knowledgeChunks.dimensions })
      .from(knowledgeChunks)
      .where(eq(knowledgeChunks.documentId, documentId))
      .limit(1);
    expect(stored).toEqual({ embedding: null, dimensions: null });
  });

  it('writes nothing for a stale generation or another organization', async () => {
    const documentId = await documentOf(admin, assistantId, 2);
    expect(await insertChunks(t.database.db, tenant, chunks(assistantId, documentId, 4, 7), indexed)).toBe(0);
    const other = await new Factories(t).user();
    expect(
      await insertChunks(
        t.database.db,
        new Tenant(other.organizationId),
        chunks(assistantId, documentId, 4, 7),
        indexed,
      ),
    ).toBe(0);
    expect(await storedChunkCount(t.database.db, tenant, documentId, 1)).toBe(0);
  });

  it('creates the HNSW index of a new length once where pgvector is installed', async () => {
    const documentId = await documentOf(admin, assistantId);
    const rows = chunks(assistantId, documentId, 2, 12);
    // Two inserts of a new length racing in two transactions: both succeed, one index.
    await Promise.all([
      t.database.db.transaction((tx) => insertChunks(tx, tenant, rows.slice(0, 1), indexed)),
      t.database.db.transaction((tx) => insertChunks(tx, tenant, rows.slice(1), indexed)),
    ]);
    expect(await storedChunkCount(t.database.db, tenant, documentId, 1)).toBe(2);
    expect(await vectorIndexExists(t.database.db, 12)).toBe(await vectorInstalled(t.database.db));
  });

  it('deletes a document’s chunks, only for its organization', async () => {
    const documentId = await documentOf(admin, assistantId);
    await insertChunks(t.database.db, tenant, chunks(assistantId, documentId, 10, 7), indexed);
    const other = await new Factories(t).user();
    expect(await deleteDocumentChunks(t.database.db, new Tenant(other.organizationId), documentId)).toBe(0);
    expect(await storedChunkCount(t.database.db, new Tenant(other.organizationId), documentId, 1)).toBe(0);
    expect(await deleteDocumentChunks(t.database.db, tenant, documentId)).toBe(10);
    expect(await storedChunkCount(t.database.db, tenant, documentId, 1)).toBe(0);
  });

  it('refuses embedding values an index could not hold', () => {
    expect(() => realArrayParameter(Float32Array.of(1, Number.NaN))).toThrow(RangeError);
    expect(() => realArrayParameter(Float32Array.of(70000))).toThrow(RangeError);
    expect(realArrayParameter(Float32Array.of(0.5)).length).toBe(28);
  });
});
