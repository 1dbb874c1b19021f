/**
 * SQL of knowledge_documents: one row per uploaded document, saying where its bytes are, which
 * generation of processing is current and how far that got. Every statement is scoped by `Tenant`;
 * the writes that belong to one generation (`updateForGeneration`) name it, so a stale job writes
 * nothing. Chunks are chunk-store.ts's.
 */
import { and, count, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Executor } from '../../db/client.js';
import {
  type DocumentStatus,
  knowledgeDocuments,
  type ProcessingSettings,
} from '../../db/schema/knowledge.js';
import type { Tenant } from '../../db/tenant.js';
import type { Page } from '../../lib/page.js';

export type DocumentRow = typeof knowledgeDocuments.$inferSelect;
export type NewDocument = Pick<
  typeof knowledgeDocuments.$inferInsert,
  | 'assistantId'
  | 'name'
  | 'category'
  | 'tags'
  | 'fileName'
  | 'contentType'
  | 'format'
  | 'bytes'
  | 'storageKey'
  | 'settings'
>;

export async function insertDocument(
  ex: Executor,
  tenant: Tenant,
  values: NewDocument,
): Promise<DocumentRow> {
  const [row] = await ex
    .insert(knowledgeDocuments)
    .values({ ...values, organizationId: tenant.organizationId })
    .returning();
  return row!;
}

/** The document, optionally locked; `assistantId` (when given) must be its assistant's. */
export async function findDocument(
  ex: Executor,
  tenant: Tenant,
  id: number,
  options: { assistantId?: number; forUpdate?: boolean } = {},
): Promise<DocumentRow | undefined> {
  const query = ex
    .select()
    .from(knowledgeDocuments)
    .where(
      tenant.where(
        knowledgeDocuments,
        eq(knowledgeDocuments.id, id),
        options.assistantId === undefined
          ? undefined
          : eq(knowledgeDocuments.assistantId, options.assistantId),
      ),
    )
    .limit(1);
  const [row] = options.forUpdate ? await query.for('update') : await query;
  return row;
}

/** An assistant's documents, newest first; `completedOnly` leaves out those not (yet) processed. */
export async function listDocuments(
  ex: Executor,
  tenant: Tenant,
  assistantId: number,
  page: Page,
  options: { completedOnly: boolean },
): Promise<{ rows: DocumentRow[]; total: number }> {
  const where = tenant.where(
    knowledgeDocuments,
    eq(knowledgeDocuments.assistantId, assistantId),
    options.completedOnly ? eq(knowledgeDocuments.status, 'completed') : undefined,
  );
  const rows = await ex
    .select()
    .from(knowledgeDocuments)
    .where(where)
    .orderBy(desc(knowledgeDocuments.createdAt), desc(knowledgeDocuments.id))
    .limit(page.perPage)
    .offset((page.page - 1) * page.perPage);
  const [counted] = await ex.select({ total: count() }).from(knowledgeDocuments).where(where);
  return { rows, total: counted?.total ?? 0 };
}

/** Ids, generations and settings of an assistant's documents, locked (a re-processing changes them all). */
export async function lockAssistantDocuments(
  ex: Executor,
  tenant: Tenant,
  assistantId: number,
): Promise<Array<Pick<DocumentRow, 'id' | 'generation' | 'settings'>>> {
  return ex
    .select({
      id: knowledgeDocuments.id,
      generation: knowledgeDocuments.generation,
      settings: knowledgeDocuments.settings,
    })
    .from(knowledgeDocuments)
    .where(tenant.where(knowledgeDocuments, eq(knowledgeDocuments.assistantId, assistantId)))
    .orderBy(knowledgeDocuments.id)
    .for('update');
}

/** Where the bytes of an assistant's documents are (to delete them once the assistant is gone). */
export async function storageKeysOfAssistant(
  ex: Executor,
  tenant: Tenant,
  assistantId: number,
): Promise<string[]> {
  const rows = await ex
    .select({ key: knowledgeDocuments.storageKey })
    .from(knowledgeDocuments)
    .where(tenant.where(knowledgeDocuments, eq(knowledgeDocuments.assistantId, assistantId)));
  return rows.map((row) => row.key);
}

/**
 * Starts a new generation of the documents: pending, counts and results cleared, the settings they
 * will be processed with. Their old chunks are deleted by the caller in the same transaction.
 */
export async function startGeneration(
  ex: Executor,
  tenant: Tenant,
  ids: number[],
  settings: ProcessingSettings,
): Promise<DocumentRow[]> {
  if (ids.length === 0) return [];
  return ex
    .update(knowledgeDocuments)
    .set({
      generation: sql`${knowledgeDocuments.generation} + 1`,
      status: 'pending',
      settings,
      totalChunks: null,
      processedChunks: 0,
      retrievalMode: null,
      embeddingModel: null,
      embeddingDimensions: null,
      error: null,
      notice: null,
      processedAt: null,
      updatedAt: new Date(),
    })
    .where(tenant.where(knowledgeDocuments, inArray(knowledgeDocuments.id, ids)))
    .returning();
}

export type GenerationChanges = Partial<
  Pick<
    DocumentRow,
    | 'status'
    | 'totalChunks'
    | 'processedChunks'
    | 'retrievalMode'
    | 'embeddingModel'
    | 'embeddingDimensions'
    | 'error'
    | 'notice'
    | 'processedAt'
  >
>;

/**
 * Writes a job's progress or result, only while `generation` is still the document's and its status
 * one of `from`; undefined when it is not (re-processed, deleted, or settled meanwhile).
 */
export async function updateForGeneration(
  ex: Executor,
  tenant: Tenant,
  id: number,
  generation: number,
  changes: GenerationChanges,
  from: DocumentStatus[] = ['pending', 'processing'],
): Promise<DocumentRow | undefined> {
  const [row] = await ex
    .update(knowledgeDocuments)
    .set({ ...changes, updatedAt: new Date() })
    .where(
      tenant.where(
        knowledgeDocuments,
        eq(knowledgeDocuments.id, id),
        eq(knowledgeDocuments.generation, generation),
        inArray(knowledgeDocuments.status, from),
      ),
    )
    .returning();
  return row;
}

/** Deletes the document (its chunks cascade); its storage key, or undefined when there was none. */
export async function deleteDocument(
  ex: Executor,
  tenant: Tenant,
  id: number,
  assistantId: number,
): Promise<string | undefined> {
  const [row] = await ex
    .delete(knowledgeDocuments)
    .where(
      tenant.where(
        knowledgeDocuments,
        and(eq(knowledgeDocuments.id, id), eq(knowledgeDocuments.assistantId, assistantId)),
      ),
    )
    .returning({ key: knowledgeDocuments.storageKey });
  return row?.key;
}

/** The `processing` documents whose `updated_at` is older than `staleSeconds` (the heartbeat stopped). */
const standsStill = (staleSeconds: number) =>
  and(
    eq(knowledgeDocuments.status, 'processing'),
    sql`${knowledgeDocuments.updatedAt} < now() - make_interval(secs => ${staleSeconds}::float8)`,
  );

/**
 * The sweep (recovery.ts) looks on the whole platform: each row names its organization, and what is
 * written about it afterwards goes through the Tenant-scoped functions.
 */
export const unscoped = {
  async staleProcessing(
    ex: Executor,
    staleSeconds: number,
    limit = 100,
  ): Promise<Array<{ id: number; organizationId: number; generation: number }>> {
    return ex
      .select({
        id: knowledgeDocuments.id,
        organizationId: knowledgeDocuments.organizationId,
        generation: knowledgeDocuments.generation,
      })
      .from(knowledgeDocuments)
      .where(standsStill(staleSeconds))
      .orderBy(knowledgeDocuments.updatedAt)
      .limit(limit);
  },
};

/**
 * Touches the document if it still stands still at `generation`; true when it did. Of two sweeps
 * (two processes) that found it, only one sees true and hands it out.
 */
export async function claimStale(
  ex: Executor,
  tenant: Tenant,
  id: number,
  generation: number,
  staleSeconds: number,
): Promise<boolean> {
  const rows = await ex
    .update(knowledgeDocuments)
    .set({ updatedAt: new Date() })
    .where(
      tenant.where(
        knowledgeDocuments,
        eq(knowledgeDocuments.id, id),
        eq(knowledgeDocuments.generation, generation),
        standsStill(staleSeconds),
      ),
    )
    .returning({ id: knowledgeDocuments.id });
  return rows.length > 0;
}
